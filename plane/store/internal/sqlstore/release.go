package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkReleasePut(p *ReleasePutParams) error {
	if p.Sequence <= 0 {
		return invalid("sequence", "sequence must be positive")
	}
	if p.Version == "" || len(p.Version) > MaxRefLen {
		return invalid("version", "version must be 1 to %d bytes", MaxRefLen)
	}
	if err := checkHash("statement_digest", p.StatementDigest); err != nil {
		return err
	}
	if len(p.Bundle) == 0 {
		return invalid("bundle", "the release needs its bundle")
	}
	if err := checkActor(p.By); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, a := range p.Artifacts {
		if a.Name == "" || len(a.Name) > MaxRefLen {
			return invalid("artifacts", "an artifact name must be 1 to %d bytes", MaxRefLen)
		}
		if names[a.Name] {
			return invalid("artifacts", "artifact %s is listed twice", a.Name)
		}
		names[a.Name] = true
		if err := checkHash("artifacts", a.Digest); err != nil {
			return err
		}
		if len(a.Data) > MaxArtifactSize {
			return invalid("artifacts", "artifact %s is over %d bytes", a.Name, MaxArtifactSize)
		}
		sum := sha256.Sum256(a.Data)
		if got := hex.EncodeToString(sum[:]); got != a.Digest {
			return errcode.New(errcode.ModuleDigestMismatch, "artifact %s hashes to %s, not %s", a.Name, got, a.Digest).
				With(errcode.DetailName, a.Name).With(errcode.DetailSHA256, a.Digest)
		}
	}
	return nil
}

func (s *sqlStore) ReleasePut(ctx context.Context, p ReleasePutParams) (Release, error) {
	if err := checkReleasePut(&p); err != nil {
		return Release{}, err
	}
	t := now(p.Now)
	r := Release{
		Sequence: p.Sequence, Version: p.Version, StatementDigest: p.StatementDigest, Bundle: p.Bundle,
		PublishedAt: t, PublishedBy: p.By, Artifacts: []ArtifactRef{},
	}
	err := s.tx(ctx, "publish release", func(ex sqldb.Execer) error {
		if s.q.ReleaseLock != "" {
			if _, err := ex.Exec(ctx, s.q.ReleaseLock); err != nil {
				return err
			}
		}
		var current int64
		if err := ex.QueryRow(ctx, s.q.ReleaseMaxSequence).Scan(&current); err != nil {
			return err
		}
		if p.Sequence <= current {
			return errcode.New(errcode.ReleaseRollback, "sequence %d is not above the newest release's %d", p.Sequence, current).
				With(errcode.DetailSequence, p.Sequence).With(errcode.DetailCurrent, current)
		}
		var expires any // NULL: none recorded
		if !p.ExpiresAt.IsZero() {
			expires = p.ExpiresAt
		}
		if _, err := ex.Exec(ctx, s.q.ReleaseInsert, p.Sequence, p.Version, p.StatementDigest, p.Bundle, t, p.By, expires); err != nil {
			return err
		}
		for _, a := range p.Artifacts {
			var has bool
			if err := ex.QueryRow(ctx, s.q.ArtifactHas, a.Digest).Scan(&has); err != nil {
				return err
			}
			if !has { // an artifact shared with an earlier release is not sent again
				if _, err := ex.Exec(ctx, s.q.ArtifactInsert, a.Digest, int64(len(a.Data)), a.Data, t); err != nil {
					return err
				}
			}
			if _, err := ex.Exec(ctx, s.q.ReleaseArtifactInsert, p.Sequence, a.Name, a.Digest); err != nil {
				return err
			}
			r.Artifacts = append(r.Artifacts, ArtifactRef{Name: a.Name, Digest: a.Digest, Size: int64(len(a.Data))})
		}
		// Publishing offers a release; only the first one published reaches nodes at once.
		if _, err := ex.Exec(ctx, s.q.FleetTargetFirstNodes, p.Sequence); err != nil {
			return err
		}
		_, err := ex.Exec(ctx, s.q.FleetTargetFirst, p.Sequence)
		return err
	})
	if err != nil {
		return Release{}, err
	}
	sortRefs(r.Artifacts)
	return r, nil
}

func (s *sqlStore) ReleaseCurrent(ctx context.Context) (Release, error) {
	return s.releaseOne(ctx, s.q.ReleaseCurrent)
}

func (s *sqlStore) ReleaseGet(ctx context.Context, p ReleaseGetParams) (Release, error) {
	if p.Sequence <= 0 {
		return Release{}, invalid("sequence", "sequence must be positive")
	}
	return s.releaseOne(ctx, s.q.ReleaseGet, p.Sequence)
}

func (s *sqlStore) releaseOne(ctx context.Context, query string, args ...any) (Release, error) {
	var r Release
	err := s.read(ctx, "get release", func(ex sqldb.Execer) error {
		var err error
		r, err = scanRelease(ex.QueryRow(ctx, query, args...))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ReleaseNotFound, "no release is published")
		}
		if err != nil {
			return err
		}
		r.Artifacts, err = s.releaseArtifacts(ctx, ex, r.Sequence)
		return err
	})
	if err != nil {
		return Release{}, err
	}
	return r, nil
}

func (s *sqlStore) ReleaseList(ctx context.Context, p ReleaseListParams) ([]Release, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.BeforeSequence < 0 {
		return nil, invalid("before_sequence", "before_sequence must not be negative")
	}
	var out []Release
	err = s.read(ctx, "list releases", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.ReleaseList, int64(limit), p.BeforeSequence)
		if err != nil {
			return err
		}
		for rs.Next() {
			r, err := scanRelease(rs)
			if err != nil {
				rs.Close()
				return err
			}
			out = append(out, r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		// After the release rows are closed: a connection runs one query at a time.
		for i := range out {
			if out[i].Artifacts, err = s.releaseArtifacts(ctx, ex, out[i].Sequence); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (s *sqlStore) releaseArtifacts(ctx context.Context, ex sqldb.Execer, seq int64) ([]ArtifactRef, error) {
	rs, err := ex.Query(ctx, s.q.ReleaseArtifacts, seq)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []ArtifactRef{}
	for rs.Next() {
		var a ArtifactRef
		if err := rs.Scan(&a.Name, &a.Digest, &a.Size); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rs.Err()
}

func (s *sqlStore) ArtifactGet(ctx context.Context, p ArtifactGetParams) (Artifact, error) {
	if err := checkHash("digest", p.Digest); err != nil {
		return Artifact{}, err
	}
	var a Artifact
	err := s.read(ctx, "get artifact", func(ex sqldb.Execer) error {
		err := ex.QueryRow(ctx, s.q.ArtifactGet, p.Digest).Scan(&a.Digest, &a.Size, &a.Data)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ModuleNotFound, "no artifact %s", p.Digest).With(errcode.DetailSHA256, p.Digest)
		}
		return err
	})
	if err != nil {
		return Artifact{}, err
	}
	return a, nil
}

func (s *sqlStore) ArtifactHas(ctx context.Context, p ArtifactGetParams) (bool, error) {
	if err := checkHash("digest", p.Digest); err != nil {
		return false, err
	}
	var has bool
	err := s.read(ctx, "look up artifact", func(ex sqldb.Execer) error {
		return ex.QueryRow(ctx, s.q.ArtifactHas, p.Digest).Scan(&has)
	})
	return has, err
}

func scanRelease(r sqldb.Row) (Release, error) {
	var rel Release
	if err := r.Scan(&rel.Sequence, &rel.Version, &rel.StatementDigest, stamp{&rel.PublishedAt}, &rel.PublishedBy,
		&rel.Bundle); err != nil {
		return Release{}, err
	}
	return rel, nil
}

// sortRefs orders refs by name in byte order, as ReleaseArtifacts reads them back.
func sortRefs(refs []ArtifactRef) {
	slices.SortFunc(refs, func(a, b ArtifactRef) int { return strings.Compare(a.Name, b.Name) })
}
