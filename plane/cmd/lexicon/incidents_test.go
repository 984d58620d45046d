package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// hostile is what a node might say to take over the terminal of whoever reads it.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil\u200b\r\nnext\u009b1m\x9b\xff"

func TestEscNeverPassesControlsThrough(t *testing.T) {
	got := esc(hostile)
	for _, r := range got {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u202e' || r == '\u200b' {
			t.Fatalf("esc let %U through: %q", r, got)
		}
	}
	want := `\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil\u200b\r\nnext\u009b1m\x9b\xff`
	if got != want {
		t.Fatalf("esc = %s\nwant  %s", got, want)
	}
	if esc(`C:\path é ✓`) != `C:\path é ✓` {
		t.Fatal("esc changed printable text")
	}
}

// fleet is a plane on loopback with an operator token, and a node with an incident whose every text
// field is hostile.
type fleet struct {
	t     *testing.T
	st    store.Store
	url   string
	token string
	inc   string
	node  store.Node // web-1, which has the incident
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := t.Context()
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	srv := httptest.NewServer(wire.New(wire.Config{Store: s}).Handler())
	t.Cleanup(srv.Close)
	tok, hash := tokens.Mint()
	if _, err := s.TokenCreate(ctx, store.TokenCreateParams{Name: "ops", Role: store.RoleOperator, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	pub := keys.NewNode().Public()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	clean := strings.ToValidUTF8(hostile, "?")
	c := store.CaseReport{ID: 1, Recipe: "unit_health", State: store.CaseOpen, OpenedAt: time.Now(), Summary: clean,
		Notes: []store.CaseNote{{Seq: 1, At: time.Now(), Text: clean}}, Body: json.RawMessage(`{"detail":"\u001b[2J\u202e"}`)}
	in, err := s.CaseIntake(ctx, store.CaseIntakeParams{NodeID: res.Node.ID, Cases: []store.CaseReport{c}})
	if err != nil || len(in.Changes) != 1 {
		t.Fatalf("CaseIntake: %v %+v", err, in)
	}
	return &fleet{t: t, st: s, url: srv.URL, token: tok, inc: in.Changes[0].Incident.ID, node: res.Node}
}

// lexicon runs the CLI in-process and returns its exit status, stdout and stderr.
func (f *fleet) lexicon(args ...string) (int, string, string) {
	f.t.Helper()
	f.t.Setenv("LEXICON_TOKEN", f.token)
	var out, errOut bytes.Buffer
	code := cli.Run(f.t.Context(), "lexicon", "", commands(), append(args, "--plane", f.url), &out, &errOut)
	return code, out.String(), errOut.String()
}

func noControls(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || r == '\u202e' || r == '\u200b' {
			t.Fatalf("%s printed %U raw:\n%q", what, r, s)
		}
	}
}

func TestIncidentsCommands(t *testing.T) {
	f := newFleet(t)
	code, out, errOut := f.lexicon("incidents", "list", "--needs-you")
	if code != 0 || !strings.Contains(out, f.inc) || !strings.Contains(out, "recipe:unit_health") {
		t.Fatalf("list: %d\n%s\n%s", code, out, errOut)
	}
	noControls(t, "list", out)

	code, out, _ = f.lexicon("incidents", "show", f.inc)
	if code != 0 || !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, "timeline:") || !strings.Contains(out, "#1 opened by node") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	noControls(t, "show", out)

	code, out, _ = f.lexicon("incidents", "triage", f.inc, "snooze", "4h", "--reason", "after the deploy")
	if code != 0 || !strings.Contains(out, "snoozed until") {
		t.Fatalf("triage: %d\n%s", code, out)
	}
	// Snoozing again later moves the end of the snooze: another event.
	code, out, _ = f.lexicon("incidents", "triage", f.inc, "snooze", "1d", "-o", "json")
	if code != 0 {
		t.Fatalf("triage again: %d %s", code, out)
	}
	code, out, _ = f.lexicon("incidents", "note", f.inc, "restarted", "nginx", "-o", "json")
	var ev api.IncidentEvent
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.Text != "restarted nginx" || ev.Kind != api.EventNote || ev.Seq != 4 {
		t.Fatalf("note: %d %s", code, out)
	}
	code, out, _ = f.lexicon("incidents", "show", f.inc, "-o", "json")
	var d api.IncidentDetail
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Events) != 4 || d.Incident.Triage != api.TriageSnoozed ||
		d.Incident.Summary != strings.ToValidUTF8(hostile, "?") {
		t.Fatalf("show -o json: %d %s", code, out)
	}
	code, out, _ = f.lexicon("incidents", "list", "--needs-you", "-o", "json")
	var l incidentList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Incidents) != 0 {
		t.Fatalf("list after snooze: %d %s", code, out)
	}

	// Usage errors exit 2 with a code, before anything is sent.
	for _, args := range [][]string{
		{"incidents", "triage", f.inc, "snooze"},
		{"incidents", "triage", f.inc, "snooze", "2h"},
		{"incidents", "triage", f.inc, "resolved", "4h"},
		{"incidents", "triage", f.inc, "fixed"},
		{"incidents", "note", f.inc},
	} {
		code, out, _ := f.lexicon(append(args, "-o", "json")...)
		if code != 2 || !strings.Contains(out, `"code": "usage.invalid"`) {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	code, out, _ = f.lexicon("incidents", "show", "inc_missing", "-o", "json")
	if code != 1 || !strings.Contains(out, "incident.not_found") {
		t.Fatalf("missing: %d %s", code, out)
	}
	for _, c := range []string{"list", "show", "triage", "note"} {
		var out, errOut bytes.Buffer
		if code := cli.Run(t.Context(), "lexicon", "", commands(), []string{"incidents", c, "--help"}, &out, &errOut); code != 0 || out.Len() == 0 {
			t.Fatalf("incidents %s --help: %d %s", c, code, errOut.String())
		}
	}
}

func TestNodeShowEscapesWhatTheNodeSaid(t *testing.T) {
	var out bytes.Buffer
	nodeOne{api.Node{Name: "web-1", AgentVersion: hostile, Untrusted: hostile,
		Facts: &api.NodeFacts{OS: hostile, OSName: "Debian GNU/Linux 12", Kernel: "6.1.0", CPUs: 2, MemoryBytes: 4 << 30,
			Addresses: []string{hostile, "192.0.2.1"}},
		Vocabulary: []api.WordRef{{Name: hostile, Version: hostile, Class: hostile, Digest: hostile}},
		Recipes:    json.RawMessage(`[{"name":"cert_expiry","state":"active","last_verdict":"fail","detail":"\u001b[2J\u202e"}]`)}}.Text(&out)
	noControls(t, "nodes show", out.String())
	if !strings.Contains(out.String(), `cannot verify the plane's statement: \x1b]0;pwned`) || !strings.Contains(out.String(), `recipe cert_expiry`) ||
		!strings.Contains(out.String(), "kernel 6.1.0") || !strings.Contains(out.String(), "memory 4096 MiB") {
		t.Fatalf("nodes show:\n%s", out.String())
	}
}

// TestNodeWordShowsReach: nodes word prints each capability the word's signed manifest declares with
// its bounds, as text that cannot drive the terminal.
func TestNodeWordShowsReach(t *testing.T) {
	var out bytes.Buffer
	wordOne{api.Word{Name: "unit_restart", Version: "1.0.0", Class: "change", Params: json.RawMessage(`{}`),
		Reach: []api.WordReach{{Cap: "systemd.restart", Units: []string{"nginx.service", hostile}}, {Cap: "fs.read", Roots: []string{"/etc/nginx"}},
			{Cap: "net.http", Hosts: []string{"@self"}}}}}.Text(&out)
	noControls(t, "nodes word", out.String())
	for _, want := range []string{"reach systemd.restart  units nginx.service", "reach fs.read          roots /etc/nginx", "hosts @self"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("nodes word lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	wordOne{api.Word{Name: "uptime", Params: json.RawMessage(`{}`)}}.Text(&out)
	if !strings.Contains(out.String(), "reach: nothing on the machine") {
		t.Fatalf("a word without capabilities:\n%s", out.String())
	}
}
