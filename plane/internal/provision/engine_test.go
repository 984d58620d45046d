package provision_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var agentBytes = []byte("\x7fELF pretend agent")

func agentDigest() string {
	sum := sha256.Sum256(agentBytes)
	return hex.EncodeToString(sum[:])
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	cloud *fakeCloud
	dns   *fakeDNS
	clock *clock
	e     *provision.Engine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	ctx := context.Background()
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	_, err := st.ReleasePut(ctx, store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: agentDigest(), Data: agentBytes}},
		By: "publisher", Now: c.now()})
	if err != nil {
		t.Fatal(err)
	}
	en := &env{t: t, ctx: ctx, st: st, cloud: newFakeCloud(), dns: &fakeDNS{}, clock: c}
	en.e = en.engine("replica-a")
	return en
}

func (en *env) engine(holder string) *provision.Engine {
	return &provision.Engine{Store: en.st, Cloud: en.cloud, DNS: en.dns, EngineBase: services.EngineBase{Holder: holder, Now: en.clock.now},
		Bootstrap: provision.Bootstrap{PlaneURL: "https://plane.example:8443", CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			Trust: map[string]string{"statement_keys/release.pub": "lexicon-statement-key:abc\n"}}}
}

func (en *env) provision(name string, mut ...func(*provision.Request)) store.Provisioning {
	en.t.Helper()
	req := provision.Request{Name: name, Account: "lin", Region: "us-east", Type: "g6-nanode-1", Image: "debian-13",
		Labels: map[string]string{"role": "web"}, DNSAccount: "dns1", DNSZone: "example.org"}
	for _, m := range mut {
		m(&req)
	}
	pr, err := en.e.Provision(en.ctx, "admin", req)
	if err != nil {
		en.t.Fatalf("Provision: %v", err)
	}
	return pr
}

func (en *env) pass() {
	en.t.Helper()
	if err := en.e.Pass(en.ctx); err != nil {
		en.t.Fatalf("Pass: %v", err)
	}
}

func (en *env) get(id string) store.Provisioning {
	en.t.Helper()
	pr, err := en.st.ProvisioningGet(en.ctx, store.ProvisioningGetParams{ID: id})
	if err != nil {
		en.t.Fatal(err)
	}
	return pr
}

func (en *env) wantState(id string, want store.ProvisioningState) store.Provisioning {
	en.t.Helper()
	pr := en.get(id)
	if pr.State != want {
		en.t.Fatalf("provisioning is %s (%s), want %s; timeline %+v", pr.State, pr.Reason, want, pr.Events)
	}
	return pr
}

// cloudConfig is the part of the user data the tests read.
type cloudConfig struct {
	WriteFiles []struct {
		Path, Permissions, Content string
	} `yaml:"write_files"`
	RunCmd [][]string `yaml:"runcmd"`
}

func parseUserData(t *testing.T, ud string) cloudConfig {
	t.Helper()
	if !strings.HasPrefix(ud, "#cloud-config\n") {
		t.Fatalf("user data does not start with #cloud-config: %.40q", ud)
	}
	var cc cloudConfig
	if err := yaml.Unmarshal([]byte(ud), &cc); err != nil {
		t.Fatalf("user data is not YAML: %v", err)
	}
	return cc
}

// tokenOf reads the one-time token from the user data the instance was created with, as the machine
// would.
func tokenOf(t *testing.T, ud string) string {
	t.Helper()
	for _, f := range parseUserData(t, ud).WriteFiles {
		if f.Path == provision.TokenFile {
			return strings.TrimSpace(f.Content)
		}
	}
	t.Fatal("the user data carries no token file")
	return ""
}

// agentJoin is the agent's join as the server's join route makes it: a fresh key, from source.
func (en *env) agentJoin(token, name, source string) (store.JoinCreateResult, keys.NodePublic, error) {
	pub := keys.NewNode().Public()
	res, err := provision.Join(en.ctx, en.st, token, store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{"10.0.0.5"}, SourceAddress: source, Now: en.clock.now()})
	return res, pub, err
}

func TestHappyPathToJoined(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	pr = en.wantState(pr.ID, store.ProvInstalling)
	if pr.InstanceID != "i-1" || pr.TokenExpiresAt.Sub(en.clock.now()) > time.Hour {
		t.Fatalf("after create: %+v", pr)
	}
	req := en.cloud.lastCreate()
	if len(req.Tags) != 1 || req.Tags[0] != pr.Tag || req.Label != "web-1" {
		t.Fatalf("create request: %+v", req)
	}
	token := tokenOf(t, req.UserData)
	res, _, err := en.agentJoin(token, "web-1", "192.0.2.1")
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if res.Join.Status != store.JoinPending || res.Join.ProvisioningID != pr.ID {
		t.Fatalf("join: %+v", res.Join)
	}
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoined)
	n, err := en.st.NodeGet(en.ctx, store.NodeGetParams{ID: pr.NodeID})
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "web-1" || n.Labels["role"] != "web" {
		t.Fatalf("node: %+v", n)
	}
	j, err := en.st.JoinGet(en.ctx, store.JoinGetParams{ID: res.Join.ID})
	if err != nil || j.Status != store.JoinApproved || j.DecidedBy != provision.Actor(pr.ID) {
		t.Fatalf("join after: %+v %v", j, err)
	}
	recs := en.dns.records["dns1/example.org"]
	if len(recs) != 2 || recs[0].Type != "A" || recs[0].Value != "192.0.2.1" || recs[1].Type != "AAAA" || recs[0].Name != "web-1" {
		t.Fatalf("DNS records: %+v", recs)
	}
	// Joined is final: the lease is given up and nothing more happens.
	en.pass()
	if en.cloud.count() != 1 {
		t.Fatal("a joined provisioning's instance was touched")
	}
}

func TestBootingWaitsForRunning(t *testing.T) {
	en := newEnv(t)
	en.cloud.running = false
	pr := en.provision("web-1")
	en.pass()
	pr = en.wantState(pr.ID, store.ProvBooting)
	en.pass()
	en.wantState(pr.ID, store.ProvBooting)
	en.cloud.setStatus(pr.InstanceID, "running")
	en.pass()
	en.wantState(pr.ID, store.ProvInstalling)
}

func TestJoinFromAnotherAddressWaitsForAPerson(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	res, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "198.51.100.66")
	if err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoining)
	if !strings.Contains(pr.Reason, "198.51.100.66") {
		t.Fatalf("the record does not say why: %q", pr.Reason)
	}
	list, err := en.st.JoinList(en.ctx, store.JoinListParams{Status: store.JoinPending})
	if err != nil || len(list.Joins) != 1 {
		t.Fatalf("pending joins: %+v %v", list, err)
	}
	j := list.Joins[0]
	if j.ID != res.Join.ID || !strings.Contains(j.HoldReason, "does not report") || j.ProvisioningID != pr.ID {
		t.Fatalf("held join: %+v", j)
	}
	// A person approves it after all: the provisioning finishes.
	if _, err := en.st.JoinApprove(en.ctx, store.JoinApproveParams{ID: j.ID, Fingerprint: j.Fingerprint, Name: "web-1", By: "admin"}); err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.wantState(pr.ID, store.ProvJoined)
}

func TestInstanceOutsideTheAccountWaits(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	token := tokenOf(t, en.cloud.lastCreate().UserData)
	// The instance vanishes from the account between the create and the join.
	en.cloud.mu.Lock()
	delete(en.cloud.instances, "i-1")
	en.cloud.mu.Unlock()
	if _, _, err := en.agentJoin(token, "web-1", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoining)
	if !strings.Contains(pr.Reason, "not in account lin") {
		t.Fatalf("reason: %q", pr.Reason)
	}
}

func TestReusedTokenRefused(t *testing.T) {
	en := newEnv(t)
	en.provision("web-1")
	en.pass()
	token := tokenOf(t, en.cloud.lastCreate().UserData)
	first, pub, err := en.agentJoin(token, "web-1", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = en.agentJoin(token, "web-1", "192.0.2.1")
	testkit.WantCode(t, err, errcode.ProvisionTokenUsed)
	// The same key asking again (its answer was lost) gets its own join back.
	again, err := provision.Join(en.ctx, en.st, token, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(),
		SourceAddress: "192.0.2.1", Now: en.clock.now()})
	if err != nil || again.Join.ID != first.Join.ID {
		t.Fatalf("retry by the same key: %+v %v", again.Join, err)
	}
	_, _, err = en.agentJoin("lxp_"+strings.Repeat("A", 43), "web-1", "192.0.2.1")
	testkit.WantCode(t, err, errcode.ProvisionTokenInvalid)
	_, _, err = en.agentJoin("not-a-token", "web-1", "192.0.2.1")
	testkit.WantCode(t, err, errcode.ProvisionTokenInvalid)
	list, _ := en.st.JoinList(en.ctx, store.JoinListParams{})
	if len(list.Joins) != 1 {
		t.Fatalf("refused tokens recorded joins: %+v", list.Joins)
	}
}

func TestExpiredTokenRefused(t *testing.T) {
	en := newEnv(t)
	en.e.Timeouts.Installing = 3 * time.Hour
	pr := en.provision("web-1")
	en.pass()
	token := tokenOf(t, en.cloud.lastCreate().UserData)
	en.clock.add(time.Hour + time.Second)
	_, _, err := en.agentJoin(token, "web-1", "192.0.2.1")
	testkit.WantCode(t, err, errcode.ProvisionTokenExpired)
	en.wantState(pr.ID, store.ProvInstalling)
}

func TestAgentNeverJoinsTimesOutAndDeletes(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	en.wantState(pr.ID, store.ProvInstalling)
	en.clock.add(21 * time.Minute)
	en.pass()
	pr = en.wantState(pr.ID, store.ProvCleanedUp)
	if !strings.Contains(pr.Reason, "timed out: installing") || pr.Cleanup != store.CleanupDeleted {
		t.Fatalf("record: %+v", pr)
	}
	if en.cloud.count() != 0 || len(en.cloud.deletes) != 1 || en.cloud.deletes[0] != "i-1" {
		t.Fatalf("instances left %d, deleted %v", en.cloud.count(), en.cloud.deletes)
	}
	// The token is void now.
	_, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1")
	testkit.WantCode(t, err, errcode.ProvisionTokenExpired)
}

func TestDeleteFailsRaisesIncident(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	en.cloud.deleteErr = errcode.New(errcode.CloudUnavailable, "the provider is down")
	en.clock.add(21 * time.Minute)
	en.pass()
	pr = en.wantState(pr.ID, store.ProvFailed)
	if pr.Cleanup != store.CleanupFailed || !strings.Contains(pr.Reason, "delete failed (cloud.unavailable)") {
		t.Fatalf("record: %+v", pr)
	}
	res, err := en.st.IncidentReconcile(en.ctx, store.IncidentReconcileParams{Now: en.clock.now()})
	if err != nil {
		t.Fatal(err)
	}
	var inc store.Incident
	for _, c := range res.Changes {
		if c.Incident.Source == store.DetectorProvisioningOrphan {
			inc = c.Incident
		}
	}
	if inc.Subject != "provisioning:"+pr.ID || !strings.Contains(inc.Summary, "i-1") {
		t.Fatalf("no orphan incident: %+v", res.Changes)
	}
	// Not retried before CleanupRetry; retried after, and the incident clears.
	en.cloud.deleteErr = nil
	en.pass()
	en.wantState(pr.ID, store.ProvFailed)
	en.clock.add(provision.CleanupRetry)
	en.pass()
	en.wantState(pr.ID, store.ProvCleanedUp)
	res, err = en.st.IncidentReconcile(en.ctx, store.IncidentReconcileParams{Now: en.clock.now()})
	if err != nil || len(res.Changes) == 0 || res.Changes[0].Incident.Condition != store.ConditionCleared {
		t.Fatalf("incident did not clear: %+v %v", res.Changes, err)
	}
}

func TestBadImageFailsWithNothingLeft(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1", func(r *provision.Request) { r.Image = "no-such-image" })
	en.pass()
	pr = en.wantState(pr.ID, store.ProvFailed)
	if !strings.Contains(pr.Reason, "cloud.invalid") || en.cloud.count() != 0 {
		t.Fatalf("record %+v, instances %d", pr, en.cloud.count())
	}
}

func TestBadInputCreatesNothing(t *testing.T) {
	en := newEnv(t)
	storetest.Node(t, en.st, "taken", "1.0.0", en.clock.now())
	cases := map[string]struct {
		mut  func(*provision.Request)
		code string
	}{
		"account": {func(r *provision.Request) { r.Account = "nope" }, errcode.AccountNotFound},
		"region":  {func(r *provision.Request) { r.Region = "mars-1" }, errcode.ProvisionUnknownRegion},
		"type":    {func(r *provision.Request) { r.Type = "huge" }, errcode.ProvisionUnknownType},
		"image":   {func(r *provision.Request) { r.Image = "bad image" }, errcode.CloudInvalid},
		"name":    {func(r *provision.Request) { r.Name = "taken" }, errcode.ProvisionNameTaken},
		"label":   {func(r *provision.Request) { r.Labels = map[string]string{"Bad Key": "x"} }, errcode.NodeLabelInvalid},
		"zone":    {func(r *provision.Request) { r.DNSZone = "" }, errcode.UsageInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req := provision.Request{Name: "web-1", Account: "lin", Region: "us-east", Type: "g6-nanode-1", Image: "debian-13",
				DNSAccount: "dns1", DNSZone: "example.org"}
			c.mut(&req)
			_, err := en.e.Provision(en.ctx, "admin", req)
			testkit.WantCode(t, err, c.code)
		})
	}
	list, err := en.st.ProvisioningList(en.ctx, store.ProvisioningListParams{})
	if err != nil || len(list) != 0 || en.cloud.count() != 0 {
		t.Fatalf("bad input left %d records, %d instances (%v)", len(list), en.cloud.count(), err)
	}
	en.provision("web-1")
	_, err = en.e.Provision(en.ctx, "admin", provision.Request{Name: "web-1", Account: "lin", Region: "us-east", Type: "g6-nanode-1", Image: "debian-13"})
	testkit.WantCode(t, err, errcode.ProvisionNameTaken)
}

// TestKilledEngineResumes kills the engine during the create call, after the provider made the
// instance and before the plane heard back: a second engine (another replica, once the lease ran
// out) finds the instance by its tag, keeps the token its user data holds, and finishes with one
// instance.
func TestKilledEngineResumes(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	ctx, cancel := context.WithCancel(en.ctx)
	en.cloud.createHook = func(context.Context) error {
		cancel()
		return errcode.New(errcode.DriverTimeout, "the plane died mid-call")
	}
	a := en.engine("replica-a")
	a.LeaseTTL = time.Minute
	// The killed pass records nothing after the call: its context is gone. A killed process gives
	// nothing back either: the lease it took for the call stays until it runs out.
	_ = a.Pass(ctx)
	en.cloud.createHook = nil
	if _, err := en.st.LeaseAcquire(en.ctx, store.LeaseAcquireParams{Subject: pr.ID, Name: provision.LeaseEngine, Holder: "replica-a",
		Purpose: "create instance", TTL: provision.CreateLease, Now: en.clock.now()}); err != nil {
		t.Fatal(err)
	}
	// The pass died with its context: the record still says creating, with the token's hash.
	cur := en.wantState(pr.ID, store.ProvCreating)
	if cur.InstanceID != "" || cur.TokenExpiresAt.IsZero() || en.cloud.count() != 1 {
		t.Fatalf("after the kill: %+v, %d instances", cur, en.cloud.count())
	}
	b := en.engine("replica-b")
	if err := b.Pass(en.ctx); err != nil {
		t.Fatal(err)
	}
	en.wantState(pr.ID, store.ProvCreating) // replica-a still holds the lease
	en.clock.add(provision.CreateLease)
	if err := b.Pass(en.ctx); err != nil {
		t.Fatal(err)
	}
	cur = en.wantState(pr.ID, store.ProvInstalling)
	if en.cloud.count() != 1 || cur.InstanceID != "i-1" {
		t.Fatalf("instances %d, record %+v", en.cloud.count(), cur)
	}
	if _, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1"); err != nil {
		t.Fatalf("the first token no longer joins: %v", err)
	}
	if err := b.Pass(en.ctx); err != nil {
		t.Fatal(err)
	}
	en.wantState(pr.ID, store.ProvJoined)
}

// TestTwoEnginesOneInstance runs two replicas' engines at once on one provisioning: one instance.
func TestTwoEnginesOneInstance(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	var wg sync.WaitGroup
	for _, h := range []string{"replica-a", "replica-b"} {
		e := en.engine(h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if err := e.Pass(en.ctx); err != nil && !errors.Is(err, context.Canceled) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	en.wantState(pr.ID, store.ProvInstalling)
	if en.cloud.count() != 1 {
		t.Fatalf("%d instances", en.cloud.count())
	}
}

// TestAdoptMatchesAddresses links an instance to a node only when the provider reports an address
// the node reported.
func TestAdoptMatchesAddresses(t *testing.T) {
	en := newEnv(t)
	en.cloud.running = true
	inst, err := en.cloud.Create(en.ctx, "test", "lin", cloudReq())
	if err != nil {
		t.Fatal(err)
	}
	pub := keys.NewNode().Public()
	j, err := en.st.JoinCreate(en.ctx, store.JoinCreateParams{Name: "old-1", Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{"10.1.1.1", inst.IPv4[0].String()}, SourceAddress: "203.0.113.9"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := en.st.JoinApprove(en.ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), By: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	other := storetest.Node(t, en.st, "other", "1.0.0", en.clock.now())
	_, err = en.e.Adopt(en.ctx, "admin", other.ID, "lin", inst.ID)
	testkit.WantCode(t, err, errcode.ProvisionAddressMismatch)
	_, err = en.e.Adopt(en.ctx, "admin", "old-1", "lin", "i-404")
	testkit.WantCode(t, err, errcode.CloudNotFound)
	pr, err := en.e.Adopt(en.ctx, "admin", "old-1", "lin", inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != store.ProvJoined || pr.NodeID != res.Node.ID || pr.InstanceID != inst.ID || pr.Tag != "" {
		t.Fatalf("adopted: %+v", pr)
	}
}

// TestTransferWatchDaily samples a joined provisioning's transfer once a day; past 80% of the
// allowance the plane:machine_transfer incident opens.
func TestTransferWatchDaily(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	if _, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.wantState(pr.ID, store.ProvJoined)
	w := &provision.TransferWatch{Store: en.st, Cloud: en.cloud, EngineBase: services.EngineBase{Holder: "replica-a", Now: en.clock.now}}
	en.cloud.transfer = cloud.Transfer{UsedBytes: 850, AllowanceBytes: 1000}
	for range 3 {
		if err := w.Pass(en.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if en.cloud.transferAsks != 1 {
		t.Fatalf("asked %d times in one day", en.cloud.transferAsks)
	}
	if got := en.get(pr.ID); got.TransferUsed != 850 || got.TransferAllowance != 1000 {
		t.Fatalf("recorded %+v", got)
	}
	res, err := en.st.IncidentReconcile(en.ctx, store.IncidentReconcileParams{Now: en.clock.now()})
	if err != nil {
		t.Fatal(err)
	}
	opened := false
	for _, c := range res.Changes {
		opened = opened || (c.Incident.Source == store.DetectorMachineTransfer && c.Incident.Subject == "provisioning:"+pr.ID)
	}
	if !opened {
		t.Fatalf("no transfer incident: %+v", res.Changes)
	}
	en.clock.add(provision.TransferEvery)
	if err := w.Pass(en.ctx); err != nil {
		t.Fatal(err)
	}
	if en.cloud.transferAsks != 2 {
		t.Fatalf("not asked again a day later: %d", en.cloud.transferAsks)
	}
}

// TestHeldJoinTimesOut: a join left for a person that nobody decides fails the provisioning at the
// joining timeout; the instance is deleted and the join rejected, so nobody approves a deleted machine.
func TestHeldJoinTimesOut(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	res, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "198.51.100.66")
	if err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.wantState(pr.ID, store.ProvJoining)
	en.clock.add(time.Hour)
	en.pass()
	pr = en.wantState(pr.ID, store.ProvCleanedUp)
	if !strings.Contains(pr.Reason, "timed out: joining") || en.cloud.count() != 0 {
		t.Fatalf("record %+v, %d instances", pr, en.cloud.count())
	}
	j, err := en.st.JoinGet(en.ctx, store.JoinGetParams{ID: res.Join.ID, Now: en.clock.now()})
	if err != nil || j.Status != store.JoinRejected {
		t.Fatalf("the held join: %+v %v", j, err)
	}
}

// TestDecommission removes a provisioned node's own records (never another record of its name),
// deletes its tagged instance and disconnects the node; the provisioning ends cleaned_up. An adopted
// node, whose instance has no tag, is refused.
func TestDecommission(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	if _, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoined)
	// A person's record of the same name stays.
	en.dns.records["dns1/example.org"] = append(en.dns.records["dns1/example.org"], dns.Record{Type: "A", Name: "web-1", Value: "198.51.100.7"})
	_, err := en.e.Decommission(en.ctx, "admin", "no-such-node")
	testkit.WantCode(t, err, errcode.NodeNotFound)
	d, err := en.e.Decommission(en.ctx, "admin", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Provisioning.State != store.ProvCleanedUp || d.Provisioning.Cleanup != store.CleanupDeleted || d.Node.Node.State != store.NodeDisconnected {
		t.Fatalf("decommissioned: %+v", d)
	}
	if recs := en.dns.records["dns1/example.org"]; len(recs) != 1 || recs[0].Value != "198.51.100.7" {
		t.Fatalf("records left: %+v", recs)
	}
	if _, err := en.cloud.Get(en.ctx, "admin", "lin", pr.InstanceID); !errcode.Has(err, errcode.CloudNotFound) {
		t.Fatalf("instance after decommission: %v", err)
	}
	_, err = en.e.Decommission(en.ctx, "admin", pr.NodeID)
	testkit.WantCode(t, err, errcode.ProvisionNotFound)

	// Adopted: refused, nothing deleted.
	inst, err := en.cloud.Create(en.ctx, "test", "lin", cloudReq())
	if err != nil {
		t.Fatal(err)
	}
	pub := keys.NewNode().Public()
	j, err := en.st.JoinCreate(en.ctx, store.JoinCreateParams{Name: "old-1", Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{inst.IPv4[0].String()}, SourceAddress: "203.0.113.9"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := en.st.JoinApprove(en.ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), By: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := en.e.Adopt(en.ctx, "admin", "old-1", "lin", inst.ID); err != nil {
		t.Fatal(err)
	}
	_, err = en.e.Decommission(en.ctx, "admin", "old-1")
	testkit.WantCode(t, err, errcode.UsageInvalid)
	if _, err := en.cloud.Get(en.ctx, "admin", "lin", inst.ID); err != nil {
		t.Fatalf("the adopted instance was touched: %v", err)
	}
}

func TestTimeoutsFlag(t *testing.T) {
	var to provision.Timeouts
	if err := to.Set("installing=3s, joining=1m"); err != nil || to.Installing != 3*time.Second || to.Joining != time.Minute || to.Creating != 0 {
		t.Fatalf("Set: %+v %v", to, err)
	}
	for _, bad := range []string{"installing", "installing=0s", "joined=1m", "installing=soon"} {
		testkit.WantCode(t, to.Set(bad), errcode.UsageInvalid)
	}
}
