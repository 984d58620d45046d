package machines_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/machines"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// clouds stands for the drivers room: a cloud account, a test account, a DNS account, and the
// accounts whose servers were listed.
type clouds struct {
	instances map[string][]api.Instance
	listed    []string
}

func (c *clouds) Accounts(context.Context, api.Token, api.AccountsListQuery) (api.AccountList, error) {
	return api.AccountList{Accounts: []api.Account{{Name: "lab", Driver: "cloud-netns"}, {Name: "sandbox", Driver: "cloud-netns", Test: true},
		{Name: "zones", Driver: "dns-memory"}, {Name: "broken", Driver: "cloud-netns"}}}, nil
}

func (c *clouds) Instances(_ context.Context, _ api.Token, account string, q api.CloudInstancesQuery) (api.InstancePage, error) {
	c.listed = append(c.listed, account)
	if account == "broken" {
		return api.InstancePage{}, errcode.New(errcode.DriverUnavailable, "the driver's process is not running")
	}
	return api.InstancePage{Instances: c.instances[account]}, nil
}

type fixture struct {
	t     *testing.T
	st    store.Store
	room  *machines.Room
	now   time.Time
	cloud *clouds
}

func newFixture(t *testing.T, backend string) *fixture {
	url := filepath.Join(t.TempDir(), "plane.db")
	if backend == "postgres" {
		url = storetest.PostgresURL(t)
	}
	f := &fixture{t: t, st: storetest.Open(t, url), now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), cloud: &clouds{instances: map[string][]api.Instance{
		"lab": {{ID: "i-1", Label: "web-1", IPv4: []string{"192.0.2.1"}}, {ID: "i-2", Label: "forgotten", IPv4: []string{"192.0.2.50"}},
			{ID: "i-3", Label: "nas", IPv4: []string{"192.0.2.60"}}},
		"sandbox": {{ID: "i-9", Label: "scratch", IPv4: []string{"192.0.2.90"}}},
	}}}
	f.room = machines.New(machines.Config{Store: f.st, Clouds: f.cloud, Now: func() time.Time { return f.now }})
	return f
}

// node enrols an active node at addr that reports word with output (none when word is "").
func (f *fixture) node(name, addr, word, output string) {
	f.t.Helper()
	ctx := context.Background()
	pub := keys.NewNode().Public()
	j, err := f.st.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{addr}, SourceAddress: addr, MaxPending: 100, MaxPendingPerSource: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: j.Join.Fingerprint, By: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	if word == "" {
		return
	}
	digest := strings.Repeat("a", 64)
	if _, err := f.st.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Vocabulary: []store.WordRef{{Name: word, Version: "1.0.0", Digest: digest, Class: "look"}}, Idle: true}); err != nil {
		f.t.Fatal(err)
	}
	job, err := f.st.JobCreate(ctx, store.JobCreateParams{NodeID: res.Node.ID, Word: word, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: res.Node.ID}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.JobFinish(ctx, store.JobFinishParams{ID: job.ID, NodeID: res.Node.ID, Outcome: store.JobCompleted, Output: json.RawMessage(output)}); err != nil {
		f.t.Fatal(err)
	}
}

var operator = api.Token{Name: "tok-operator", Role: api.RoleOperator}

func rows(list api.MachineList) string {
	var out []string
	for _, m := range list.Machines {
		out = append(out, fmt.Sprintf("%s:%s:%s", m.Color, m.Source, m.Name))
	}
	return strings.Join(out, " ")
}

func find(t *testing.T, list api.MachineList, source, name string) api.Machine {
	t.Helper()
	i := slices.IndexFunc(list.Machines, func(m api.Machine) bool { return m.Source == source && m.Name == name })
	if i < 0 {
		t.Fatalf("no %s in %s", name, rows(list))
	}
	return list.Machines[i]
}

// TestInventory: the nodes' OS from their newest report (Debian 12 past its standard support is red,
// Ubuntu 24.04 green, a node with no report grey), the cloud servers no node runs on (amber unless a
// machine written down is named for it; the test account never listed, the failing one a warning),
// and the machines written down (retire-by passed red, unconfirmed for 90 days amber): red first.
func TestInventory(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			f := newFixture(t, backend)
			ctx := context.Background()
			f.node("web-1", "192.0.2.1", "packages_report", `{"known":true,"os":{"id":"debian","version_id":"12"}}`)
			f.node("web-2", "192.0.2.2", "host_report", `{"os_id":"ubuntu","os_version":"24.04"}`)
			f.node("web-3", "192.0.2.3", "", "")
			_, err := f.room.Add(ctx, operator, api.MachineRequest{Name: "nas", Purpose: "backups", Owner: "ops", OSRelease: "Debian 13", RetireBy: "2026-11-30"})
			if err != nil {
				t.Fatal(err)
			}
			old, err := f.room.Add(ctx, operator, api.MachineRequest{Name: "old-box", Purpose: "printer server", Owner: "office", OSRelease: "rhel 9.4"})
			if err != nil {
				t.Fatal(err)
			}
			f.now = f.now.Add(91 * 24 * time.Hour)
			list, err := f.room.List(ctx, operator)
			if err != nil {
				t.Fatal(err)
			}
			want := "red:written:nas red:node:web-1 amber:cloud:forgotten amber:written:old-box grey:node:web-3 green:cloud:nas green:node:web-2"
			if got := rows(list); got != want {
				t.Fatalf("inventory\n got %s\nwant %s", got, want)
			}
			if m := find(t, list, api.MachineFromNode, "web-1"); m.OSRelease != "debian 12" || m.SupportEnd != "2026-06-10" || m.SupportSource == "" ||
				!strings.Contains(m.Reasons[0], "debian 12's standard support ended 2026-06-10") {
				t.Fatalf("web-1 %+v", m)
			}
			if m := find(t, list, api.MachineFromWritten, "nas"); !slices.Contains(m.Reasons, "its retire-by day 2026-11-30 has passed") || m.Purpose != "backups" {
				t.Fatalf("nas %+v", m)
			}
			if m := find(t, list, api.MachineFromWritten, "old-box"); len(m.Reasons) != 1 || !strings.Contains(m.Reasons[0], "not confirmed since 2026-12-03") {
				t.Fatalf("old-box %+v", m)
			}
			if m := find(t, list, api.MachineFromCloud, "forgotten"); m.ID != "lab/i-2" || m.Account != "lab" {
				t.Fatalf("forgotten %+v", m)
			}
			if slices.Contains(f.cloud.listed, "sandbox") || slices.Contains(f.cloud.listed, "zones") {
				t.Fatalf("listed %v: a test account or a DNS account", f.cloud.listed)
			}
			if len(list.Warnings) != 1 || !strings.Contains(list.Warnings[0], "cloud account broken not listed") {
				t.Fatalf("warnings %v", list.Warnings)
			}

			// Confirming turns old-box green; removing takes nas off (and its server is amber again).
			if m, err := f.room.Confirm(ctx, operator, old.ID); err != nil || m.Color != api.MachineGreen || m.ConfirmedBy != "tok-operator" {
				t.Fatalf("confirm %+v %v", m, err)
			}
			nas := find(t, list, api.MachineFromWritten, "nas")
			if _, err := f.room.Remove(ctx, operator, nas.ID); err != nil {
				t.Fatal(err)
			}
			list, err = f.room.List(ctx, operator)
			if err != nil {
				t.Fatal(err)
			}
			if got := rows(list); got != "red:node:web-1 amber:cloud:forgotten amber:cloud:nas grey:node:web-3 green:written:old-box green:node:web-2" {
				t.Fatalf("after confirm and remove: %s", got)
			}
			// Editing rewrites every field and confirms.
			ed, err := f.room.Edit(ctx, operator, old.ID, api.MachineRequest{Name: "old-box", Purpose: "print", Owner: "office", OSRelease: "ubuntu 20.04"})
			if err != nil || ed.Color != api.MachineRed || ed.Purpose != "print" || !ed.ConfirmedAt.Equal(f.now) {
				t.Fatalf("edit %+v %v", ed, err)
			}
		})
	}
}

// TestWrittenRefusals: each bad field is refused with its code, and nothing is written.
func TestWrittenRefusals(t *testing.T) {
	f := newFixture(t, "sqlite")
	ctx := context.Background()
	good := api.MachineRequest{Name: "nas", Purpose: "backups", Owner: "ops", OSRelease: "debian 12"}
	for _, c := range []struct {
		edit func(*api.MachineRequest)
		code string
	}{
		{func(r *api.MachineRequest) { r.Name = "" }, errcode.MachineFieldInvalid},
		{func(r *api.MachineRequest) { r.Name = "Bad Name" }, errcode.MachineFieldInvalid},
		{func(r *api.MachineRequest) { r.Purpose = "" }, errcode.MachineFieldInvalid},
		{func(r *api.MachineRequest) { r.Owner = strings.Repeat("o", 201) }, errcode.MachineFieldInvalid},
		{func(r *api.MachineRequest) { r.OSRelease = "bookworm" }, errcode.MachineOSReleaseInvalid},
		{func(r *api.MachineRequest) { r.OSRelease = "debian twelve" }, errcode.MachineOSReleaseInvalid},
		{func(r *api.MachineRequest) { r.OSRelease = "plan9 4" }, errcode.MachineOSReleaseInvalid},
		{func(r *api.MachineRequest) { r.RetireBy = "03/01/2027" }, errcode.MachineRetireByInvalid},
		{func(r *api.MachineRequest) { r.RetireBy = "1970-01-01" }, errcode.MachineRetireByInvalid},
		{func(r *api.MachineRequest) { r.RetireBy = "2027-02-30" }, errcode.MachineRetireByInvalid},
	} {
		req := good
		c.edit(&req)
		_, err := f.room.Add(ctx, operator, req)
		testkit.WantCode(t, err, c.code)
	}
	if list, err := f.st.MachineList(ctx); err != nil || len(list) != 0 {
		t.Fatalf("refusals wrote %+v %v", list, err)
	}
	if _, err := f.room.Add(ctx, operator, good); err != nil {
		t.Fatal(err)
	}
	_, err := f.room.Add(ctx, operator, good)
	testkit.WantCode(t, err, errcode.MachineNameTaken)
	_, err = f.room.Confirm(ctx, operator, "mach_nope")
	testkit.WantCode(t, err, errcode.MachineNotFound)
	_, err = f.room.Edit(ctx, operator, "mach_nope", good)
	testkit.WantCode(t, err, errcode.MachineNotFound)
	_, err = f.room.Remove(ctx, operator, "mach_nope")
	testkit.WantCode(t, err, errcode.MachineNotFound)
}
