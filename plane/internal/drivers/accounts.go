package drivers

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxCredential caps a credential (TSIG keys and API tokens are far shorter).
const MaxCredential = 16 << 10

// AccountAddRequest is a new account. Credential is the secret itself; it is sealed before it is
// stored and never returned.
type AccountAddRequest struct {
	Driver     string
	Name       string
	Settings   json.RawMessage // a JSON object; nil means {}
	Credential driver.Secret
	// Test marks an account of throwaway instances (see CloudDeleteTagged).
	Test bool
}

func (r *AccountAddRequest) check() error {
	if !store.ValidAccountName(r.Name) {
		return errcode.New(errcode.RequestMalformed, "account name %q must be lowercase letters, digits, '.', '-' and '_' (at most 63)", r.Name).
			With(errcode.DetailField, "name")
	}
	if err := checkName(r.Driver); err != nil {
		return err
	}
	if len(r.Settings) == 0 {
		r.Settings = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if len(r.Settings) > store.MaxAccountSettings || json.Unmarshal(r.Settings, &obj) != nil || obj == nil {
		return errcode.New(errcode.RequestMalformed, "settings must be a JSON object of at most %d bytes", store.MaxAccountSettings).
			With(errcode.DetailField, "settings")
	}
	c := r.Credential.Reveal()
	if c == "" || len(c) > MaxCredential || !utf8.ValidString(c) {
		return errcode.New(errcode.RequestMalformed, "the credential must be 1 to %d bytes of text", MaxCredential).With(errcode.DetailField, "credential")
	}
	return nil
}

// AccountAdd stores an account after proving it works with its driver: the driver must be enabled and
// pinned; a process of it is started for the account and given the settings (checked against the
// driver's config schema) with the credential. Only then is the credential sealed under the master key
// and stored; that process goes on serving the account. Refused: account.exists, driver.disabled,
// driver.not_pinned, driver.config_invalid, and whatever the driver's SetConfig says.
func (m *Manager) AccountAdd(ctx context.Context, actor string, req AccountAddRequest) (store.Account, error) {
	if err := req.check(); err != nil {
		return store.Account{}, err
	}
	t0 := m.cfg.Now()
	a, err := m.accountAdd(ctx, actor, req)
	m.record(ctx, actor, req.Name, req.Driver, store.OpAccountAdd, "", t0, err)
	return a, err
}

func (m *Manager) accountAdd(ctx context.Context, actor string, req AccountAddRequest) (store.Account, error) {
	if _, err := m.store.AccountGet(ctx, store.AccountGetParams{Name: req.Name}); err == nil {
		return store.Account{}, errcode.New(errcode.AccountExists, "an account named %s exists; remove it first to replace it", req.Name).
			With(errcode.DetailName, req.Name)
	} else if !errcode.Has(err, errcode.AccountNotFound) {
		return store.Account{}, err
	}
	life, err := m.slotFor(req.Driver)
	if err != nil {
		return store.Account{}, err
	}
	life.life.RLock()
	defer life.life.RUnlock()
	e, err := m.usable(ctx, req.Driver)
	if err != nil {
		return store.Account{}, err
	}
	sl, err := m.ensure(ctx, e, false)
	if err != nil {
		return store.Account{}, err
	}
	d, err := m.startAccount(ctx, e, req.Settings, req.Credential)
	if err != nil {
		return store.Account{}, err
	}
	sealed, keyID := m.cfg.Key.SealWithID([]byte(req.Credential.Reveal()), seal.AccountContext(req.Name, req.Driver))
	a, err := m.store.AccountCreate(ctx, store.AccountCreateParams{
		Name: req.Name, Driver: req.Driver, Settings: req.Settings, KeyID: keyID,
		Sealed: sealed,
		Test:   req.Test, By: actor, Now: m.cfg.Now(),
	})
	if err != nil {
		d.Stop()
		return store.Account{}, err
	}
	sl.mu.Lock()
	if sl.base != nil && sl.entry.Digest == e.Digest && !m.isClosed() {
		sl.accounts[a.ID] = &accountProc{id: a.ID, name: a.Name, d: d}
		d = nil
	}
	sl.mu.Unlock()
	if d != nil { // the driver was stopped or re-pinned meanwhile; the next call starts a fresh process
		d.Stop()
	}
	m.log.Info("driver account added", "account", a.Name, "driver", a.Driver, "key_id", a.KeyID, "by", actor)
	return a, nil
}

// AccountList returns accounts without their credentials.
func (m *Manager) AccountList(ctx context.Context, driverName string) ([]store.Account, error) {
	if driverName != "" {
		if err := checkName(driverName); err != nil {
			return nil, err
		}
	}
	return m.store.AccountList(ctx, store.AccountListParams{Driver: driverName})
}

// AccountRemove deletes an account and its sealed credential and stops its process here (other
// replicas stop theirs within SyncEvery; calls there already fail with account.not_found).
func (m *Manager) AccountRemove(ctx context.Context, actor, name string) (store.Account, error) {
	if !store.ValidAccountName(name) {
		return store.Account{}, errcode.New(errcode.AccountNotFound, "no account named %q", name).With(errcode.DetailName, name)
	}
	t0 := m.cfg.Now()
	a, err := m.store.AccountRemove(ctx, store.AccountRemoveParams{Name: name})
	if err != nil {
		return store.Account{}, err
	}
	m.mu.Lock()
	sl := m.slots[a.Driver]
	m.mu.Unlock()
	if sl != nil {
		sl.mu.Lock()
		if p := sl.accounts[a.ID]; p != nil {
			p.d.Stop()
			delete(sl.accounts, a.ID)
		}
		sl.mu.Unlock()
	}
	m.record(ctx, actor, a.Name, a.Driver, store.OpAccountRemove, "", t0, nil)
	m.log.Info("driver account removed", "account", a.Name, "driver", a.Driver, "by", actor)
	return a, nil
}

// usable returns the current release's entry for a driver that is enabled: driver.disabled when it is
// not (stopping any process left here), driver.not_pinned when the release does not pin it.
func (m *Manager) usable(ctx context.Context, name string) (Entry, error) {
	st, err := m.store.DriverGet(ctx, store.DriverGetParams{Name: name})
	if err != nil {
		return Entry{}, err
	}
	if !st.Enabled {
		m.stopName(name, "disabled")
		return Entry{}, errcode.New(errcode.DriverDisabled, "driver %s is disabled; an admin enables it with lexicon drivers enable %s", name, name).
			With(errcode.DetailDriver, name)
	}
	cat, err := m.catalog(ctx, false)
	if err != nil {
		return Entry{}, err
	}
	e, ok := cat.get(name)
	if !ok {
		m.stopName(name, "no longer pinned by the current release")
		return Entry{}, cat.notPinned(name, m.cfg.Platform)
	}
	e.Unconfined = st.Unconfined
	return e, nil
}

// startAccount starts a process of e for one account and configures it. go-plugin's host checks the
// settings against the driver's config schema first (driver.config_invalid naming the field).
func (m *Manager) startAccount(ctx context.Context, e Entry, settings json.RawMessage, cred driver.Secret) (*goplugin.Driver, error) {
	d, err := m.start(ctx, e)
	if err != nil {
		return nil, err
	}
	cfg := driver.Config{Settings: settings, Credential: cred}
	if e.Kind == driver.KindCloud {
		c, _ := d.Cloud()
		err = c.SetConfig(ctx, cfg)
	} else {
		n, _ := d.DNS()
		err = n.SetConfig(ctx, cfg)
	}
	if err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// use is an account resolved for a call: its driver's entry and the process serving it.
type use struct {
	account store.Account
	entry   Entry
	d       *goplugin.Driver
}

// resolve finds the process serving account for an operation of kind, starting the driver and the
// account's process when this replica has none (the credential is unsealed then, and only then).
// The returned use names the driver whenever the account exists, even on error, for the audit log.
func (m *Manager) resolve(ctx context.Context, actor, account string, kind driver.Kind) (use, error) {
	var u use
	if !store.ValidAccountName(account) {
		return u, errcode.New(errcode.AccountNotFound, "no account named %q", account).With(errcode.DetailName, account)
	}
	a, err := m.store.AccountGet(ctx, store.AccountGetParams{Name: account})
	if err != nil {
		return u, err
	}
	u.account = a
	u.entry.Name = a.Driver
	life, err := m.slotFor(a.Driver)
	if err != nil {
		return u, err
	}
	life.life.RLock()
	defer life.life.RUnlock()
	e, err := m.usable(ctx, a.Driver)
	if err != nil {
		return u, err
	}
	u.entry = e
	if e.Kind != kind {
		return u, errcode.New(errcode.AccountWrongKind, "account %s uses %s, a %s driver; this is a %s operation", a.Name, a.Driver, e.Kind, kind).
			With(errcode.DetailKind, string(e.Kind))
	}
	sl, err := m.ensure(ctx, e, false)
	if err != nil {
		return u, err
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if m.isClosed() {
		return u, errcode.New(errcode.DriverUnavailable, "the plane is stopping")
	}
	if sl.base == nil || sl.entry.Digest != e.Digest {
		return u, errcode.New(errcode.DriverUnavailable, "driver %s is being restarted; try again", e.Name)
	}
	if p := sl.accounts[a.ID]; p != nil {
		u.d = p.d
		return u, nil
	}
	cred, err := m.unseal(a)
	if err != nil {
		return u, err
	}
	t0 := m.cfg.Now()
	d, err := m.startAccount(ctx, e, a.Settings, cred)
	m.record(ctx, actor, a.Name, e.Name, store.OpDriverSetConfig, "", t0, err)
	if err != nil {
		return u, err
	}
	sl.accounts[a.ID] = &accountProc{id: a.ID, name: a.Name, d: d}
	u.d = d
	return u, nil
}

// unseal opens an account's credential with the plane's master key.
func (m *Manager) unseal(a store.Account) (driver.Secret, error) {
	// The row names its key: during a master key rotation some rows are under the old key and some
	// under the new, and the ring opens both (reading the key files again for an id it does not hold).
	plain, err := m.cfg.Key.OpenAs(a.Sealed, seal.AccountContext(a.Name, a.Driver), a.KeyID)
	if err != nil {
		return driver.Secret{}, err
	}
	return driver.NewSecret(string(plain)), nil
}
