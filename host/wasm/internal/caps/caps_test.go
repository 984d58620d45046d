package caps

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func TestReachable(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "203.0.113.9": true, "::1": true, "2001:db8::1": true,
		"169.254.169.254": false, "0.0.0.0": false, "::": false, "224.0.0.1": false, "fe80::1": false,
		"::ffff:169.254.169.254": false, "ff02::1": false,
		// Cloud metadata and credential services outside link-local space.
		"fd00:ec2::254": false, "fd00:ec2::23": false, "fd20:ce::254": false, "fd00:42::42": false,
		"100.100.100.200": false, "168.63.129.16": false, "192.0.0.192": false, "::ffff:100.100.100.200": false,
		// Their neighbours are ordinary addresses.
		"fd00:ec2::255": true, "fd20:ce::1": true, "100.100.100.201": true, "168.63.129.17": true,
		// Through the NAT64 prefix, the IPv4 address inside is what is reached.
		"64:ff9b::a9fe:a9fe": false, "64:ff9b::6464:64c8": false, "64:ff9b::cb00:7109": true,
	} {
		if got := reachable(netip.MustParseAddr(s)); got != want {
			t.Errorf("reachable(%s) = %v", s, got)
		}
	}
}

func TestMatchHost(t *testing.T) {
	cases := []struct {
		decl, host  string
		port, deflt int
		want        bool
	}{
		{"example.com", "example.com", 443, 443, true},
		{"example.com", "EXAMPLE.com.", 443, 443, true},
		{"example.com", "example.com", 8443, 443, false},
		{"example.com:8443", "example.com", 8443, 443, true},
		{"example.com:8443", "example.com", 443, 443, false},
		{"example.com", "www.example.com", 443, 443, false},
		{"[::1]:8080", "::1", 8080, 80, true},
		{"127.0.0.1", "::ffff:127.0.0.1", 80, 80, true},
	}
	for _, c := range cases {
		if got := matchHost(c.decl, c.host, c.port, c.deflt); got != c.want {
			t.Errorf("matchHost(%q, %q, %d) = %v", c.decl, c.host, c.port, got)
		}
	}
}

// fuzzWord declares every capability that needs no network, over a temporary root.
func fuzzWord(f testing.TB) *Word {
	root := testkit.SafeDir(f) // so fs.write reaches the write, not the root's refusal
	os.WriteFile(filepath.Join(root, "a"), []byte("data"), 0o644)
	os.Symlink("/etc", filepath.Join(root, "out"))
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": "fuzz", "kind": "word", "version": "1.0.0", "class": "change",
		"summary": "fuzz", "params": json.RawMessage(`{"type":"object","additionalProperties":false}`),
		"output": json.RawMessage(`{"type":"object"}`), "module": map[string]any{"file": "f.wasm"},
		"capabilities": []map[string]any{
			{"cap": "fs.read", "paths": []string{root}}, {"cap": "fs.stat", "paths": []string{root}},
			{"cap": "fs.list", "paths": []string{root}}, {"cap": "fs.write", "paths": []string{root}, "max_bytes": 64},
			{"cap": "sys.facts"}, {"cap": "sys.disk", "paths": []string{root}},
			{"cap": "systemd.unit", "units": []string{"a*"}}, {"cap": "systemd.restart", "units": []string{"a*"}},
			{"cap": "journal.read", "units": []string{"*"}},
		},
	}
	b, _ := json.Marshal(doc)
	m, err := manifest.Parse(b)
	if err != nil {
		f.Fatal(err)
	}
	fake := systemdtest.New(map[string]string{"a.service": "ActiveState=active\n"})
	w, err := Prepare(m, &Env{Systemd: fake})
	if err != nil {
		f.Fatal(err)
	}
	return w
}

// FuzzDispatch: whatever a word sends, the host answers one well-formed response and records one call.
func FuzzDispatch(f *testing.F) {
	w := fuzzWord(f)
	for _, s := range []string{
		`{"cap":"fs.read","path":"/x"}`, `{"cap":"fs.list","path":"/","sizes":true}`, `{"cap":"fs.write","path":"/tmp/x","data":"aGk="}`,
		`{"cap":"sys.facts"}`, `{"cap":"systemd.unit","failed":true}`, `{"cap":"journal.read","unit":"a.service","lines":-1}`,
		`{"cap":"fs.stat","path":"/a/../../etc"}`, `{"cap":"exec.pinned"}`, `[]`, `{"cap":1}`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		d := w.Invocation()
		resp := d.Call(context.Background(), req)
		var r capv1.Response
		if err := json.Unmarshal(resp, &r); err != nil {
			t.Fatalf("response %q is not JSON: %v", resp, err)
		}
		if (r.Error == nil) == (r.Result == nil) {
			t.Fatalf("response %s has neither or both of result and error", resp)
		}
		if n := len(d.Calls()); n != 1 {
			t.Fatalf("%d calls recorded", n)
		}
	})
}

// TestRunAgainRenewsBudget: a second run of an invocation has the whole call budget, and the record
// keeps both runs' calls.
func TestRunAgainRenewsBudget(t *testing.T) {
	d := fuzzWord(t).Invocation()
	call := func() *capv1.Response {
		var r capv1.Response
		if err := json.Unmarshal(d.Call(context.Background(), []byte(`{"cap":"sys.facts"}`)), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	for range MaxCalls - 1 {
		call()
	}
	d.RunAgain()
	for i := range MaxCalls {
		if r := call(); r.Error != nil {
			t.Fatalf("call %d of the second run: %+v", i+1, r.Error)
		}
	}
	if r := call(); r.Error == nil || r.Error.Code != errcode.CapabilityBudgetExceeded {
		t.Fatalf("call %d of the second run: %+v, want %s", MaxCalls+1, r, errcode.CapabilityBudgetExceeded)
	}
	if n := len(d.Calls()); n != 2*MaxCalls {
		t.Fatalf("%d calls recorded, want both runs' %d and the first refused", n, 2*MaxCalls)
	}
}
