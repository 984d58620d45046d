package drivers

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// slot is one driver on this replica: its accountless process (proof that the pinned executable
// verifies and starts, and its status) and one process per account in use.
type slot struct {
	name string

	// life orders what decides whether the driver runs here: Enable, Disable and Sync hold it to
	// write; a call holds it to read while it checks the store and starts what it needs, so a disable
	// cannot fall between a call's check and its start.
	life sync.RWMutex

	mu       sync.Mutex // held while processes start or stop
	entry    Entry      // what runs
	base     *goplugin.Driver
	accounts map[string]*accountProc // by account id
	// The last failed start, so that calls and Run do not hash a broken executable again and again.
	failErr    error
	failDigest string
	failedAt   time.Time
}

// accountProc is the process serving one account; it holds that account's credential and no other.
type accountProc struct {
	id, name string
	d        *goplugin.Driver
}

func checkName(name string) error {
	if !store.ValidDriverName(name) {
		return errcode.New(errcode.RequestMalformed, "%q is not a driver name (<class>-<name>, as lexicon drivers list shows)", name).
			With(errcode.DetailField, "name")
	}
	return nil
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

func (m *Manager) slotFor(name string) (*slot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errcode.New(errcode.DriverUnavailable, "the plane is stopping")
	}
	sl := m.slots[name]
	if sl == nil {
		sl = &slot{name: name, accounts: map[string]*accountProc{}}
		m.slots[name] = sl
	}
	return sl, nil
}

// ensure makes sure e's pinned executable runs on this replica. A driver running another digest (the
// current release re-pinned it) is stopped, with its accounts' processes, and started on the new one.
// A start that failed less than RetryAfter ago is not tried again unless force is set.
func (m *Manager) ensure(ctx context.Context, e Entry, force bool) (*slot, error) {
	sl, err := m.slotFor(e.Name)
	if err != nil {
		return nil, err
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if m.isClosed() { // Close may have stopped this slot while we waited for it
		return nil, errcode.New(errcode.DriverUnavailable, "the plane is stopping")
	}
	if sl.base != nil && sl.entry.Digest == e.Digest && !sl.consentWithdrawn(e, m.cfg.Plugin) {
		return sl, nil
	}
	if sl.base != nil && sl.entry.Digest == e.Digest {
		if force { // an enable without consent: refused, and what runs is left as it was
			return nil, unconfinedErr(e.Name, e.Privileged)
		}
		m.log.Warn("driver runs unconfined but its consent was withdrawn: stopping it", "driver", e.Name)
		sl.stopLocked()
	} else if sl.base != nil {
		m.log.Warn("driver re-pinned by the current release: restarting it on the new executable",
			"driver", e.Name, "old_sha256", sl.entry.Digest, "sha256", e.Digest, "version", e.Version)
		sl.stopLocked()
	}
	if !force && sl.failErr != nil && sl.failDigest == e.Digest && m.cfg.Now().Sub(sl.failedAt) < m.cfg.RetryAfter {
		return nil, sl.failErr
	}
	d, err := m.start(ctx, e)
	if err != nil {
		sl.failErr, sl.failDigest, sl.failedAt = err, e.Digest, m.cfg.Now()
		m.log.Error("driver did not start; nothing of it runs", "driver", e.Name, "sha256", e.Digest, "err", err)
		return nil, err
	}
	sl.base, sl.entry, sl.failErr = d, e, nil
	return sl, nil
}

// start starts one process of e from the local copy, fetching it from the plane store first.
func (m *Manager) start(ctx context.Context, e Entry) (*goplugin.Driver, error) {
	if err := m.materialize(ctx, e); err != nil {
		return nil, err
	}
	opts := m.cfg.Plugin
	opts.Unconfined = opts.Unconfined || e.Unconfined
	opts.Privileged = e.Privileged
	opts.OnRestart = func(cause string) { m.recordRestart(e.Name, cause) }
	d, err := goplugin.Start(ctx, m.cas, goplugin.Spec{Name: e.Name, Kind: e.Kind, Digest: e.Digest}, opts)
	if errcode.Has(err, errcode.ModuleDigestMismatch) {
		// The local copy was altered after it was fetched (and checked): go-plugin's hash refused it
		// before exec. Remove it so that the next start fetches the store's copy again.
		path := m.cas.Path(e.Digest)
		m.log.Error("driver refused before exec: the plane's local copy of its executable was altered; removing it",
			"driver", e.Name, "sha256", e.Digest, "path", path)
		_ = os.Remove(path)
		return nil, err
	}
	return d, err
}

// materialize copies e's executable from the plane store into the local copy, refusing bytes that do
// not hash to the pinned digest. A copy already present is left to go-plugin's hash at exec, the one
// check that covers the bytes that run.
func (m *Manager) materialize(ctx context.Context, e Entry) error {
	if m.cas.Has(e.Digest) {
		return nil
	}
	a, err := m.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: e.Digest})
	if err != nil {
		return err
	}
	if got := cas.Sum(a.Data); got != e.Digest {
		return errcode.New(errcode.ModuleDigestMismatch,
			"the plane store's copy of driver %s hashes to %s, not to the %s the release pins: refused, nothing was run",
			e.Name, got, e.Digest).With(errcode.DetailSHA256, e.Digest).With(errcode.DetailDriver, e.Name)
	}
	_, _, err = m.cas.PutReader(bytes.NewReader(a.Data))
	return err
}

// consentWithdrawn reports whether the driver runs unconfined here while e (the store's state) no
// longer consents to it; sl.mu is held.
func (sl *slot) consentWithdrawn(e Entry, opts goplugin.Options) bool {
	if e.Unconfined || opts.Unconfined || sl.base == nil {
		return false
	}
	return slices.Equal(sl.base.Status().Protections, []string{goplugin.ProtectUnconfined})
}

func unconfinedErr(name string, privileged bool) error {
	if privileged {
		return errcode.New(errcode.DriverUnconfined,
			"driver %s is privileged (its work is this machine): it runs as the plane's own user without Landlock and could read the plane's files; pass --unconfined to lexicon drivers enable to accept that", name).
			With(errcode.DetailDriver, name)
	}
	return errcode.New(errcode.DriverUnconfined,
		"driver %s cannot be confined on this replica (no separate user, no Landlock) and would read the plane's files; pass --unconfined to lexicon drivers enable to accept that", name).
		With(errcode.DetailDriver, name)
}

// stopLocked stops the driver's processes; sl.mu is held.
func (sl *slot) stopLocked() {
	for id, p := range sl.accounts {
		p.d.Stop()
		delete(sl.accounts, id)
	}
	if sl.base != nil {
		sl.base.Stop()
		sl.base = nil
	}
}

func (m *Manager) stopSlot(sl *slot, why string) {
	sl.mu.Lock()
	running := sl.base != nil
	sl.stopLocked()
	sl.failErr = nil
	sl.mu.Unlock()
	if running {
		m.log.Info("driver stopped", "driver", sl.name, "why", why)
	}
}

// stopName stops a driver's processes on this replica, if it has any.
func (m *Manager) stopName(name, why string) {
	m.mu.Lock()
	sl := m.slots[name]
	m.mu.Unlock()
	if sl != nil {
		m.stopSlot(sl, why)
	}
}

// reapAccounts stops the processes of accounts that no longer exist (removed through any replica).
func (m *Manager) reapAccounts(ctx context.Context, sl *slot, e Entry) {
	accts, err := m.store.AccountList(ctx, store.AccountListParams{Driver: e.Name})
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, a := range accts {
		live[a.ID] = true
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	for id, p := range sl.accounts {
		if !live[id] {
			p.d.Stop()
			delete(sl.accounts, id)
			m.log.Info("driver process of a removed account stopped", "driver", sl.name, "account", p.name)
		}
	}
}

// Enable enables a driver the current release pins: its executable is fetched, verified and started
// here first (so an altered executable is refused now, before exec, and nothing is recorded), then the
// store records it enabled for every replica, with unconfined: the admin's consent to run it where no
// protection of the plane's files can be applied, honoured by every replica and every restart.
// Refused: driver.not_pinned, module.digest_mismatch, driver.start_failed, driver.unconfined (no
// protection applies here and unconfined is not set). The audit entry's target is "unconfined" when
// the consent was given.
func (m *Manager) Enable(ctx context.Context, actor, name string, unconfined bool) (api.Driver, error) {
	target := ""
	if unconfined {
		target = "unconfined"
	}
	return m.audited(ctx, actor, name, store.OpDriverEnable, target, func(ctx context.Context, actor, name string) (api.Driver, error) {
		return m.enable(ctx, actor, name, unconfined)
	})
}

// audited runs op (enable or disable) on the named driver and records it in the audit log, whatever
// its outcome.
func (m *Manager) audited(ctx context.Context, actor, name, op, target string, run func(context.Context, string, string) (api.Driver, error)) (api.Driver, error) {
	if err := checkName(name); err != nil {
		return api.Driver{}, err
	}
	t0 := m.cfg.Now()
	d, err := run(ctx, actor, name)
	m.record(ctx, actor, "", name, op, target, t0, err)
	return d, err
}

func (m *Manager) enable(ctx context.Context, actor, name string, unconfined bool) (api.Driver, error) {
	cat, err := m.catalog(ctx, true)
	if err != nil {
		return api.Driver{}, err
	}
	e, ok := cat.get(name)
	if !ok {
		return api.Driver{}, cat.notPinned(name, m.cfg.Platform)
	}
	e.Unconfined = unconfined
	sl, err := m.slotFor(name)
	if err != nil {
		return api.Driver{}, err
	}
	sl.life.Lock()
	defer sl.life.Unlock()
	if _, err := m.ensure(ctx, e, true); err != nil {
		if errcode.Has(err, errcode.DriverUnconfined) {
			err = unconfinedErr(name, e.Privileged) // in the words of the command the admin runs
		}
		return api.Driver{}, err
	}
	st, err := m.store.DriverEnable(ctx, store.DriverSetParams{Name: name, Digest: e.Digest, Unconfined: unconfined, By: actor, Now: m.cfg.Now()})
	if err != nil {
		m.stopName(name, "enabling it was not recorded")
		return api.Driver{}, err
	}
	m.log.Info("driver enabled", "driver", name, "sha256", e.Digest, "version", e.Version, "by", actor, "unconfined", unconfined)
	return listing(e, true, st), nil
}

// Disable records a driver disabled for every replica and stops its processes here; other replicas
// refuse calls at once (every call reads the store) and stop theirs within SyncEvery. Calls in flight
// fail with driver.disabled.
func (m *Manager) Disable(ctx context.Context, actor, name string) (api.Driver, error) {
	return m.audited(ctx, actor, name, store.OpDriverDisable, "", m.disable)
}

func (m *Manager) disable(ctx context.Context, actor, name string) (api.Driver, error) {
	cat, err := m.catalog(ctx, false)
	if err != nil {
		return api.Driver{}, err
	}
	e, pinned := cat.get(name)
	if !pinned {
		cur, err := m.store.DriverGet(ctx, store.DriverGetParams{Name: name})
		if err != nil {
			return api.Driver{}, err
		}
		if cur.ChangedAt.IsZero() { // neither pinned nor ever enabled: a typo
			return api.Driver{}, cat.notPinned(name, m.cfg.Platform)
		}
		e = Entry{Name: name}
	}
	sl, err := m.slotFor(name)
	if err != nil {
		return api.Driver{}, err
	}
	sl.life.Lock()
	defer sl.life.Unlock()
	st, err := m.store.DriverDisable(ctx, store.DriverSetParams{Name: name, By: actor, Now: m.cfg.Now()})
	if err != nil {
		return api.Driver{}, err
	}
	m.stopName(name, "disabled by "+actor)
	m.log.Info("driver disabled", "driver", name, "by", actor)
	return listing(e, pinned, st), nil
}

func listing(e Entry, pinned bool, st store.DriverState) api.Driver {
	return api.Driver{Name: e.Name, Kind: string(e.Kind), Version: e.Version, Summary: e.Summary, Platform: e.Platform,
		Digest: e.Digest, Pinned: pinned, Enabled: st.Enabled, ChangedAt: st.ChangedAt, ChangedBy: st.ChangedBy,
		Unconfined: st.Unconfined}
}

// List returns the drivers the current release pins, and those enabled that it no longer pins.
func (m *Manager) List(ctx context.Context) (api.DriverList, error) {
	cat, err := m.catalog(ctx, false)
	if err != nil {
		return api.DriverList{}, err
	}
	states, err := m.store.DriverList(ctx)
	if err != nil {
		return api.DriverList{}, err
	}
	byName := map[string]store.DriverState{}
	for _, st := range states {
		byName[st.Name] = st
	}
	out := api.DriverList{Release: cat.release, Sequence: cat.sequence, Drivers: []api.Driver{}}
	for _, e := range cat.sorted() {
		out.Drivers = append(out.Drivers, listing(e, true, byName[e.Name]))
	}
	for _, st := range states {
		if _, ok := cat.get(st.Name); !ok && st.Enabled {
			out.Drivers = append(out.Drivers, listing(Entry{Name: st.Name}, false, st))
		}
	}
	return out, nil
}

// Status returns this replica's processes for every driver an admin enabled or disabled, and any other
// running here or that failed to start.
func (m *Manager) Status(ctx context.Context) (api.StatusList, error) {
	cat, err := m.catalog(ctx, false)
	if err != nil {
		return api.StatusList{}, err
	}
	states, err := m.store.DriverList(ctx)
	if err != nil {
		return api.StatusList{}, err
	}
	names := map[string]bool{}
	enabled := map[string]bool{}
	for _, st := range states { // every driver an admin enabled or disabled
		names[st.Name], enabled[st.Name] = true, st.Enabled
	}
	slots := map[string]*slot{}
	for _, sl := range m.slotList() {
		sl.mu.Lock()
		if sl.base != nil || sl.failErr != nil {
			slots[sl.name], names[sl.name] = sl, true
		}
		sl.mu.Unlock()
	}
	out := api.StatusList{Replica: m.replica, Drivers: []api.Status{}}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		e, pinned := cat.get(n)
		s := api.Status{Name: n, Replica: m.replica, Enabled: enabled[n], Pinned: pinned, Kind: string(e.Kind), Version: e.Version,
			State: "stopped", Accounts: []api.ProcessInfo{}}
		if !enabled[n] {
			s.State = "disabled"
		}
		if sl := slots[n]; sl != nil {
			sl.status(&s)
		}
		out.Drivers = append(out.Drivers, s)
	}
	return out, nil
}

func (sl *slot) status(s *api.Status) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.failErr != nil {
		s.State, s.LastError = "failed", sl.failErr.Error()
	}
	if sl.base == nil {
		return
	}
	st := sl.base.Status()
	s.State, s.PID, s.Restarts, s.Digest = string(st.State), st.PID, st.Restarts, sl.entry.Digest
	s.Protections = st.Protections
	s.Kind, s.Version = string(sl.entry.Kind), sl.entry.Version
	if st.LastError != "" {
		s.LastError = st.LastError
	}
	for _, p := range sl.accounts {
		ps := p.d.Status()
		s.Accounts = append(s.Accounts, api.ProcessInfo{Account: p.name, State: string(ps.State), PID: ps.PID, Restarts: ps.Restarts, LastError: ps.LastError})
	}
	slices.SortFunc(s.Accounts, func(a, b api.ProcessInfo) int { return strings.Compare(a.Account, b.Account) })
}
