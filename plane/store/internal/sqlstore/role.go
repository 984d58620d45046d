package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkRoleName(name string) error {
	if !ValidRoleName(name) {
		return invalid("name", "%q is not a role name (a-z, 0-9 and '-', starting with a letter, at most 63)", name)
	}
	return nil
}

func checkRolePut(p *RolePutParams) error {
	if err := checkRoleName(p.Name); err != nil {
		return err
	}
	if len(p.Spec) == 0 || len(p.Spec) > MaxRoleSpec || !json.Valid(p.Spec) {
		return invalid("spec", "a role's spec is one JSON value of at most %d bytes", MaxRoleSpec)
	}
	if p.Base < 0 {
		return invalid("base", "base must not be negative")
	}
	if err := checkActor(p.By); err != nil {
		return err
	}
	for _, c := range p.Contents {
		if err := checkHash("contents", c.Digest); err != nil {
			return err
		}
		if len(c.Data) > MaxArtifactSize {
			return invalid("contents", "content %s is over %d bytes", c.Digest, MaxArtifactSize)
		}
		sum := sha256.Sum256(c.Data)
		if got := hex.EncodeToString(sum[:]); got != c.Digest {
			return errcode.New(errcode.ModuleDigestMismatch, "content hashes to %s, not %s", got, c.Digest).With(errcode.DetailSHA256, c.Digest)
		}
	}
	return nil
}

func roleNotFound(name string) error {
	return errcode.New(errcode.RoleNotFound, "no role %s", name).With(errcode.DetailName, name)
}

func (s *sqlStore) RoleCreate(ctx context.Context, p RolePutParams) (RoleVersion, error) {
	return s.rolePut(ctx, p, true)
}

func (s *sqlStore) RoleEdit(ctx context.Context, p RolePutParams) (RoleVersion, error) {
	return s.rolePut(ctx, p, false)
}

func (s *sqlStore) rolePut(ctx context.Context, p RolePutParams, create bool) (RoleVersion, error) {
	if err := checkRolePut(&p); err != nil {
		return RoleVersion{}, err
	}
	t := now(p.Now)
	out := RoleVersion{Name: p.Name, Version: 1, Spec: p.Spec, CreatedAt: t, CreatedBy: p.By}
	err := s.tx(ctx, "put role", func(ex sqldb.Execer) error {
		if create {
			_, err := ex.Exec(ctx, s.q.RoleInsert, p.Name, t)
			if s.drv.Kind(err) == sqldb.ErrUnique {
				return errcode.New(errcode.RoleExists, "role %s exists; edit it to make a new version", p.Name).With(errcode.DetailName, p.Name)
			}
			if err != nil {
				return err
			}
		} else {
			var cur int
			err := ex.QueryRow(ctx, s.q.RoleVersionForUpdate, p.Name).Scan(&cur)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return roleNotFound(p.Name)
			}
			if err != nil {
				return err
			}
			if p.Base != 0 && p.Base != cur {
				return errcode.New(errcode.RoleStale, "role %s is at version %d, not %d: read it again and redo the edit", p.Name, cur, p.Base).
					With(errcode.DetailName, p.Name).With(errcode.DetailVersion, cur)
			}
			out.Version = cur + 1
			if _, err := ex.Exec(ctx, s.q.RoleSetVersion, p.Name, out.Version); err != nil {
				return err
			}
		}
		if _, err := ex.Exec(ctx, s.q.RoleVersionInsert, p.Name, out.Version, string(p.Spec), t, p.By); err != nil {
			return err
		}
		for _, c := range p.Contents {
			if _, err := ex.Exec(ctx, s.q.ArtifactInsert, c.Digest, int64(len(c.Data)), c.Data, t); err != nil {
				return err
			}
			if _, err := ex.Exec(ctx, s.q.RoleVersionArtifactInsert, p.Name, out.Version, c.Digest); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return RoleVersion{}, err
	}
	return out, nil
}

func scanRoleVersion(row sqldb.Row) (RoleVersion, error) {
	var v RoleVersion
	var spec []byte
	err := row.Scan(&v.Name, &v.Version, &spec, stamp{&v.CreatedAt}, &v.CreatedBy)
	v.Spec = spec
	return v, err
}

func (s *sqlStore) RoleGet(ctx context.Context, p RoleGetParams) (RoleVersion, error) {
	if err := checkRoleName(p.Name); err != nil {
		return RoleVersion{}, err
	}
	if p.Version < 0 {
		return RoleVersion{}, invalid("version", "version must not be negative")
	}
	var out RoleVersion
	err := s.read(ctx, "get role", func(ex sqldb.Execer) error {
		var err error
		out, err = scanRoleVersion(ex.QueryRow(ctx, s.q.RoleGet, p.Name, p.Version))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			if p.Version != 0 {
				return errcode.New(errcode.RoleNotFound, "role %s has no version %d", p.Name, p.Version).
					With(errcode.DetailName, p.Name).With(errcode.DetailVersion, p.Version)
			}
			return roleNotFound(p.Name)
		}
		return err
	})
	return out, err
}

func (s *sqlStore) roleVersions(ctx context.Context, what, query string, args ...any) ([]RoleVersion, error) {
	out := []RoleVersion{}
	err := s.read(ctx, what, func(ex sqldb.Execer) error {
		rows, err := ex.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scanRoleVersion(rows)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, err
}

func (s *sqlStore) RoleList(ctx context.Context, _ RoleListParams) ([]RoleVersion, error) {
	return s.roleVersions(ctx, "list roles", s.q.RoleList)
}

func (s *sqlStore) RoleHistory(ctx context.Context, p RoleHistoryParams) ([]RoleVersion, error) {
	if err := checkRoleName(p.Name); err != nil {
		return nil, err
	}
	out, err := s.roleVersions(ctx, "role history", s.q.RoleHistory, p.Name)
	if err == nil && len(out) == 0 {
		return nil, roleNotFound(p.Name)
	}
	return out, err
}

func checkSelector(sel string) error {
	if len(sel) > MaxSelector || !ValidText(sel) {
		return invalid("selector", "a selector is text of at most %d bytes", MaxSelector)
	}
	return nil
}

func (s *sqlStore) RoleAssign(ctx context.Context, p RoleAssignParams) (RoleAssignment, error) {
	if err := checkRoleName(p.Role); err != nil {
		return RoleAssignment{}, err
	}
	if err := checkSelector(p.Selector); err != nil {
		return RoleAssignment{}, err
	}
	if err := checkActor(p.By); err != nil {
		return RoleAssignment{}, err
	}
	var out RoleAssignment
	err := s.tx(ctx, "assign role", func(ex sqldb.Execer) error {
		var has bool
		if err := ex.QueryRow(ctx, s.q.RoleExists, p.Role).Scan(&has); err != nil {
			return err
		}
		if !has {
			return roleNotFound(p.Role)
		}
		if _, err := ex.Exec(ctx, s.q.RoleAssignInsert, p.Role, p.Selector, now(p.Now), p.By); err != nil {
			return err
		}
		return ex.QueryRow(ctx, s.q.RoleAssignmentGet, p.Role, p.Selector).Scan(&out.Role, &out.Selector, stamp{&out.CreatedAt}, &out.CreatedBy)
	})
	return out, err
}

func (s *sqlStore) RoleUnassign(ctx context.Context, p RoleUnassignParams) error {
	if err := checkRoleName(p.Role); err != nil {
		return err
	}
	if err := checkSelector(p.Selector); err != nil {
		return err
	}
	return s.write(ctx, "unassign role", func(ex sqldb.Execer) error {
		n, err := ex.Exec(ctx, s.q.RoleAssignmentDelete, p.Role, p.Selector)
		if err != nil {
			return err
		}
		if n == 0 {
			return errcode.New(errcode.RoleNotFound, "role %s is not assigned by selector %q", p.Role, p.Selector).With(errcode.DetailName, p.Role)
		}
		return nil
	})
}

func (s *sqlStore) RoleAssignmentList(ctx context.Context, p RoleAssignmentListParams) ([]RoleAssignment, error) {
	if p.Role != "" {
		if err := checkRoleName(p.Role); err != nil {
			return nil, err
		}
	}
	out := []RoleAssignment{}
	err := s.read(ctx, "list role assignments", func(ex sqldb.Execer) error {
		rows, err := ex.Query(ctx, s.q.RoleAssignmentList, p.Role)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a RoleAssignment
			if err := rows.Scan(&a.Role, &a.Selector, stamp{&a.CreatedAt}, &a.CreatedBy); err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, err
}

func (s *sqlStore) ArtifactReleased(ctx context.Context, p ArtifactGetParams) (bool, error) {
	if err := checkHash("digest", p.Digest); err != nil {
		return false, err
	}
	var has bool
	err := s.read(ctx, "artifact released", func(ex sqldb.Execer) error {
		return ex.QueryRow(ctx, s.q.ArtifactReleased, p.Digest).Scan(&has)
	})
	return has, err
}
