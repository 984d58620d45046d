package sqlstore

import (
	"context"

	. "github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
)

// maxSealedValue bounds a sealed value a rotation writes: the largest any table accepts.
const maxSealedValue = 64 << 10

func (s *sqlStore) sealedQueries(kind SealedKind) (list, reseal string, err error) {
	switch kind {
	case SealedAccount:
		return s.q.SealedAccountList, s.q.SealedAccountReseal, nil
	case SealedBackupTarget:
		return s.q.SealedTargetList, s.q.SealedTargetReseal, nil
	case SealedSSOSession:
		return s.q.SealedSessionList, s.q.SealedSessionReseal, nil
	}
	return "", "", invalid("kind", "kind is one of account, backup_target, sso_session, not %q", kind)
}

func (s *sqlStore) SealedValueList(ctx context.Context, p SealedValueListParams) ([]SealedValue, error) {
	list, _, err := s.sealedQueries(p.Kind)
	if err != nil {
		return nil, err
	}
	if p.Limit < 1 || p.Limit > MaxSealedPage {
		return nil, invalid("limit", "limit is 1 to %d", MaxSealedPage)
	}
	if err := checkRef("after", p.After); err != nil {
		return nil, err
	}
	out := []SealedValue{}
	err = s.read(ctx, "list sealed values", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, list, p.After, p.Limit)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			v := SealedValue{Kind: p.Kind}
			if err := rs.Scan(&v.Ref, &v.Name, &v.Driver, &v.Sealed, &v.KeyID); err != nil {
				return err
			}
			out = append(out, v)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) SealedValueReseal(ctx context.Context, p SealedValueResealParams) (bool, error) {
	_, reseal, err := s.sealedQueries(p.Kind)
	if err != nil {
		return false, err
	}
	switch {
	case p.Ref == "" || checkRef("ref", p.Ref) != nil:
		return false, invalid("ref", "ref names the row: 1 to %d bytes", MaxRefLen)
	case len(p.Old) == 0:
		return false, invalid("old", "old is the sealed value the row holds")
	case len(p.New) == 0 || len(p.New) > maxSealedValue:
		return false, invalid("new", "a sealed value is 1 to %d bytes", maxSealedValue)
	case p.Kind != SealedSSOSession && !keyIDRE.MatchString(p.KeyID):
		return false, invalid("key_id", "key id must be 16 to 64 lowercase hex digits")
	}
	args := []any{p.Ref, p.Old, p.New}
	if p.Kind != SealedSSOSession { // sessions record no key id
		args = append(args, p.KeyID)
	}
	var n int64
	err = s.tx(ctx, "re-seal a sealed value", func(ex sqldb.Execer) error {
		n, err = ex.Exec(ctx, reseal, args...)
		return err
	})
	return n == 1, err
}
