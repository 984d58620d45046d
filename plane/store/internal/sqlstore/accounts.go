package sqlstore

import (
	"context"
	"encoding/json"
	"regexp"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

var keyIDRE = regexp.MustCompile(`^[0-9a-f]{16,64}$`)

func checkAccountName(name string) error {
	if !ValidAccountName(name) {
		return invalid("name", "account name %q must be lowercase letters, digits, '.', '-' and '_' (at most 63)", name)
	}
	return nil
}

func checkAccountCreate(p *AccountCreateParams) error {
	if err := checkAccountName(p.Name); err != nil {
		return err
	}
	if err := checkDriverName("driver", p.Driver); err != nil {
		return err
	}
	if len(p.Settings) > MaxAccountSettings {
		return invalid("settings", "settings are over %d bytes", MaxAccountSettings)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p.Settings, &obj); err != nil || obj == nil {
		return invalid("settings", "settings must be a JSON object")
	}
	if len(p.Sealed) == 0 || len(p.Sealed) > MaxSealedCredential {
		return invalid("sealed", "the sealed credential must be 1 to %d bytes", MaxSealedCredential)
	}
	if !keyIDRE.MatchString(p.KeyID) {
		return invalid("key_id", "key id must be 16 to 64 lowercase hex digits")
	}
	if p.By == "" {
		return invalid("by", "an account records who added it")
	}
	return checkActor(p.By)
}

func (s *sqlStore) AccountCreate(ctx context.Context, p AccountCreateParams) (Account, error) {
	if err := checkAccountCreate(&p); err != nil {
		return Account{}, err
	}
	t := now(p.Now)
	a := Account{ID: s.ids.next("acct_", t), Name: p.Name, Driver: p.Driver, Settings: p.Settings, KeyID: p.KeyID,
		CreatedAt: t, CreatedBy: p.By, Test: p.Test}
	err := s.tx(ctx, "create account", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.AccountInsert, a.ID, a.Name, a.Driver, string(a.Settings), p.Sealed, a.KeyID, t, a.CreatedBy, a.Test)
		if s.drv.Kind(err) == sqldb.ErrUnique {
			return errcode.New(errcode.AccountExists, "an account named %s exists; remove it first to replace it", p.Name).
				With(errcode.DetailName, p.Name)
		}
		return err
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

func (s *sqlStore) AccountGet(ctx context.Context, p AccountGetParams) (Account, error) {
	if err := checkAccountName(p.Name); err != nil {
		return Account{}, err
	}
	var a Account
	err := s.read(ctx, "get account", func(ex sqldb.Execer) error {
		var settings []byte
		err := ex.QueryRow(ctx, s.q.AccountGet, p.Name).Scan(&a.ID, &a.Name, &a.Driver, &settings, &a.KeyID,
			stamp{&a.CreatedAt}, &a.CreatedBy, &a.Test, &a.Sealed)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.AccountNotFound, "no account named %s (lexicon accounts list)", p.Name).With(errcode.DetailName, p.Name)
		}
		a.Settings = json.RawMessage(settings)
		return err
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

func (s *sqlStore) AccountList(ctx context.Context, p AccountListParams) ([]Account, error) {
	if p.Driver != "" {
		if err := checkDriverName("driver", p.Driver); err != nil {
			return nil, err
		}
	}
	out := []Account{}
	err := s.read(ctx, "list accounts", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.AccountList, p.Driver)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			a, err := scanAccount(rs)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) AccountRemove(ctx context.Context, p AccountRemoveParams) (Account, error) {
	if err := checkAccountName(p.Name); err != nil {
		return Account{}, err
	}
	var a Account
	err := s.tx(ctx, "remove account", func(ex sqldb.Execer) error {
		var err error
		a, err = scanAccount(ex.QueryRow(ctx, s.q.AccountDelete, p.Name))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.AccountNotFound, "no account named %s (lexicon accounts list)", p.Name).With(errcode.DetailName, p.Name)
		}
		return err
	})
	return a, err
}

func (s *sqlStore) AccountSetTest(ctx context.Context, p AccountSetTestParams) (Account, error) {
	if err := checkAccountName(p.Name); err != nil {
		return Account{}, err
	}
	var a Account
	err := s.tx(ctx, "mark account test", func(ex sqldb.Execer) error {
		var err error
		a, err = scanAccount(ex.QueryRow(ctx, s.q.AccountSetTest, p.Name, p.Test))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.AccountNotFound, "no account named %s (lexicon accounts list)", p.Name).With(errcode.DetailName, p.Name)
		}
		return err
	})
	return a, err
}

func scanAccount(r sqldb.Row) (Account, error) {
	var a Account
	var settings []byte
	err := r.Scan(&a.ID, &a.Name, &a.Driver, &settings, &a.KeyID, stamp{&a.CreatedAt}, &a.CreatedBy, &a.Test)
	a.Settings = json.RawMessage(settings)
	return a, err
}
