package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Secrets a word could let slip, and what each must become once redacted.
const (
	secretCredential = "hunter2"
	secretLocalPart  = "alice"
	secretIP         = "203.0.113.7"
	secretToken      = "Zq8Xv2LmN4pR7tYw1KcB9dHs3FjG6aUe"
)

var secretText = "DB_PASSWORD=" + secretCredential + " mailed " + secretLocalPart + "@example.com from " + secretIP +
	" with key " + secretToken

var secretJSON = json.RawMessage(`{"password":"` + secretCredential + `","owner":"` + secretLocalPart +
	`@example.com","peer":"` + secretIP + `","note":"key ` + secretToken + `"}`)

// assertRedacted fails when s still holds any of the secrets or lacks any of the markers.
func assertRedacted(t *testing.T, field, s string) {
	t.Helper()
	for _, secret := range []string{secretCredential, secretLocalPart + "@", secretIP, secretToken} {
		if strings.Contains(s, secret) {
			t.Errorf("%s leaves the node with %q: %s", field, secret, s)
		}
	}
	for _, marker := range []string{"[redacted:credential]", "…@example.com", "[redacted:ip]", "[redacted:token]"} {
		if !strings.Contains(s, marker) {
			t.Errorf("%s lacks %q: %s", field, marker, s)
		}
	}
}

// TestReportRedacts: a credential value, an e-mail local part, an IP address and a long opaque token
// are redacted from the output, the transcript, the message and every capability call's arguments
// before the result leaves the node; everything else is reported as the host gave it.
func TestReportRedacts(t *testing.T) {
	r := &Runner{}
	got := r.report(&wasm.Result{
		Outcome:    wasm.Failed,
		Code:       "app.unhealthy",
		Message:    secretText,
		Output:     secretJSON,
		Transcript: "starting\n" + secretText + "\n",
		Capabilities: []wasm.Call{
			{Cap: "fs.read", Args: secretJSON, Allowed: true},
			{Cap: "net.http", Args: json.RawMessage(`{"url":"https://` + secretIP + `/","headers":["Authorization: Bearer ` +
				secretToken + `"],"body":"` + secretText + `"}`), Allowed: false},
		},
		DurationMS: 42,
	})
	if got.Outcome != channel.OutcomeFailed || got.Code != "app.unhealthy" || got.DurationMS != 42 {
		t.Fatalf("result %+v", got)
	}
	assertRedacted(t, "message", got.Message)
	assertRedacted(t, "transcript", got.Transcript)
	if !json.Valid(got.Output) {
		t.Fatalf("output is not JSON: %s", got.Output)
	}
	assertRedacted(t, "output", string(got.Output))
	if len(got.Capabilities) != 2 {
		t.Fatalf("capabilities %+v", got.Capabilities)
	}
	for i, want := range []channel.Capability{{Cap: "fs.read", Allowed: true}, {Cap: "net.http", Allowed: false}} {
		c := got.Capabilities[i]
		if c.Cap != want.Cap || c.Allowed != want.Allowed {
			t.Fatalf("capability %d: %+v, want %+v", i, c, want)
		}
		if !json.Valid(c.Args) {
			t.Fatalf("%s args are not JSON: %s", c.Cap, c.Args)
		}
	}
	assertRedacted(t, "fs.read args", string(got.Capabilities[0].Args))
	assertRedacted(t, "net.http args", string(got.Capabilities[1].Args))
}

// TestReportDropsUnredactableOutput: output that cannot be parsed to be redacted is dropped, never sent
// as it is.
func TestReportDropsUnredactableOutput(t *testing.T) {
	got := (&Runner{}).report(&wasm.Result{Outcome: wasm.Completed, Output: json.RawMessage(`{"password":"` + secretCredential)})
	if got.Outcome != channel.OutcomeFailed || got.Code != errcode.WordOutputInvalid || len(got.Output) != 0 {
		t.Fatalf("result %+v", got)
	}
}
