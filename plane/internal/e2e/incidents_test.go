package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// servedCert is a TLS server on loopback standing for a site the node serves; the test swaps its
// certificate as an operator renewing it would.
type servedCert struct {
	addr string
	cert atomic.Pointer[tls.Certificate]
}

func newServedCert(t *testing.T, validFor time.Duration) *servedCert {
	t.Helper()
	s := &servedCert{}
	s.renew(t, validFor)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return s.cert.Load(), nil
	}})
	must(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	s.addr = ln.Addr().String()
	return s
}

// renew serves a fresh self-signed certificate valid for validFor from now.
func (s *servedCert) renew(t *testing.T, validFor time.Duration) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "shop.example.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	s.cert.Store(&tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key})
}

// pagerDuty is a webhook receiver that keeps every event it is sent.
type pagerDuty struct {
	*httptest.Server
	mu       sync.Mutex
	events   []map[string]any
	received testkit.Cond // broadcast on each event
}

func newPagerDuty(t *testing.T) *pagerDuty {
	p := &pagerDuty{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil || r.URL.Path != "/v2/enqueue" {
			t.Errorf("webhook got %s %s", r.URL.Path, b)
		}
		p.mu.Lock()
		p.events = append(p.events, ev)
		p.mu.Unlock()
		p.received.Broadcast()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"success","message":"Event processed","dedup_key":"x"}`))
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *pagerDuty) got() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.events...)
}

// stageCertExpiry stages the built-in cert_expiry recipe and its repair word, with a one-minute interval (the shortest a
// manifest may ask for), so that the test sees it escalate and clear in minutes rather than hours.
func stageCertExpiry(t testing.TB) func(dir string) {
	return func(dir string) {
		raw, err := os.ReadFile(filepath.Join(root, "primitives", "recipes", "cert_expiry", "manifest.json"))
		must(t, err)
		var m map[string]any
		must(t, json.Unmarshal(raw, &m))
		m["recipe"].(map[string]any)["interval"] = "1m"
		b, err := json.Marshal(m)
		must(t, err)
		stage(t, dir, "cert_expiry", b, filepath.Join(root, "build", "wasm", "recipes", "cert_expiry.wasm"), "cert_expiry.wasm")
		// Its repair word ships with it, as in a real release; the node's policy names no renewal
		// program, so the recipe only checks.
		repair, err := os.ReadFile(filepath.Join(root, "primitives", "renew_cert", "manifest.json"))
		must(t, err)
		stage(t, dir, "renew_cert", repair, filepath.Join(root, "build", "wasm", "renew_cert.wasm"), "renew_cert.wasm")
	}
}

// incidentsOf lists a node's incidents through the admin CLI.
func (f *fleet) incidentsOf(node string, extra ...string) []map[string]any {
	f.t.Helper()
	res := f.lexicon(false, append([]string{"incidents", "list", "--node", node}, extra...)...)
	var out []map[string]any
	for _, i := range res["incidents"].([]any) {
		out = append(out, i.(map[string]any))
	}
	return out
}

// A real agent with a real recipe escalates a case; the plane makes it an incident and pages once; a
// person triages it; the node's check passes after the certificate is renewed, and the incident clears,
// with no second page however often the plane looks.
func TestRecipeCaseBecomesAnIncident(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			pd := newPagerDuty(t)
			site := newServedCert(t, 2*24*time.Hour) // 2 days left: under cert_expiry's 14
			dir := t.TempDir()
			hooks := filepath.Join(dir, "webhooks.json")
			must(t, os.WriteFile(hooks, []byte(fmt.Sprintf(`{"webhooks": [{"name": "pagerduty", "format": "pagerduty",
				"url": %q, "routing_key": "R0UT1NGK3Y"}]}`, pd.URL+"/v2/enqueue")), 0o600))
			f := newFleet(t, backend, fleetOptions{claimWait: "1s", stage: stageCertExpiry(t),
				serveArgs: []string{"--webhooks", hooks, "--reconcile-every", "1s"}})
			policy := fmt.Sprintf(`{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "names": [%q]}`, site.addr)
			a := f.enrol("shop-1", policy)

			// Two failing ticks a minute apart escalate: with no renewal program, cert_expiry only checks.
			f.planeLog.WaitFor(t, `"msg":"incident opened"`) // the case became an incident
			list := f.incidentsOf(a.name)
			if len(list) != 1 {
				t.Fatalf("incidents of %s: %v", a.name, list)
			}
			inc := list[0]
			id := inc["id"].(string)
			if inc["source"] != "recipe:cert_expiry" || inc["severity"] != "warning" || inc["condition"] != "open" ||
				inc["triage"] != "new" || inc["needs_you"] != true || !contains(inc["summary"].(string), "days left") {
				t.Fatalf("incident %v", inc)
			}
			show := f.lexicon(false, "incidents", "show", id)
			c, _ := show["case"].(map[string]any)
			if c == nil || c["state"] != "open" || c["recipe"] != "cert_expiry" || c["body"] == nil {
				t.Fatalf("incident's case %v", show["case"])
			}

			// One page, to PagerDuty, keyed by the incident.
			pd.received.Until(t, "the webhook", func() bool { return len(pd.got()) > 0 })
			ev := pd.got()[0]
			payload, _ := ev["payload"].(map[string]any)
			if ev["dedup_key"] != id || ev["event_action"] != "trigger" || ev["routing_key"] != "R0UT1NGK3Y" ||
				payload["severity"] != "warning" || payload["source"] != "shop-1" {
				t.Fatalf("pagerduty event %v", ev)
			}

			// A person snoozes it and says why; it no longer needs anyone.
			tri := f.lexicon(false, "incidents", "triage", id, "snooze", "4h", "--reason", "renewal ordered")
			if tri["incident"].(map[string]any)["triage"] != "snoozed" {
				t.Fatalf("triage %v", tri)
			}
			f.lexicon(false, "incidents", "note", id, "certificate", "renewal", "ordered")
			if l := f.incidentsOf(a.name, "--needs-you"); len(l) != 0 {
				t.Fatalf("a snoozed incident needs you: %v", l)
			}

			// The certificate is renewed; the node's next check passes and closes the case, which
			// clears the incident. The person's snooze stands.
			site.renew(t, 90*24*time.Hour)
			f.planeLog.WaitFor(t, `"msg":"incident cleared","incident":"`+id+`"`)
			show = f.lexicon(false, "incidents", "show", id)
			got := show["incident"].(map[string]any)
			if got["triage"] != "snoozed" || got["triaged_by"] != "e2e-admin" {
				t.Fatalf("cleared incident %v", got)
			}
			if c := show["case"].(map[string]any); c["state"] != "closed" || c["closed_by"] != "node" {
				t.Fatalf("case %v", c)
			}
			var kinds []string
			for _, e := range show["events"].([]any) {
				kinds = append(kinds, e.(map[string]any)["kind"].(string))
			}
			if strings.Join(kinds, ",") != "opened,triage,note,cleared" {
				t.Fatalf("timeline %v", kinds)
			}
			// Clearing resolves the page under the same dedup key. The reconciler has looked every second
			// all along: still one trigger and one resolve. (A notification is written in the transaction
			// of its event, so none can be on its way.)
			pd.received.Until(t, "the resolve", func() bool { return len(pd.got()) >= 2 })
			if n := len(pd.got()); n != 2 {
				t.Fatalf("the webhook got %d events, want 2", n)
			}
			if ev := pd.got()[1]; ev["dedup_key"] != id || ev["event_action"] != "resolve" || ev["routing_key"] != "R0UT1NGK3Y" {
				t.Fatalf("resolve event %v", ev)
			}
			// The webhook answered before the plane recorded the outcome: wait for the record.
			show = f.lexicon(false, "incidents", "show", id)
			ns := show["notifications"].([]any)
			if len(ns) == 2 {
				f.planeLog.WaitFor(t, `"msg":"notification delivered","notification":"`+ns[1].(map[string]any)["id"].(string)+`"`)
				show = f.lexicon(false, "incidents", "show", id)
				ns = show["notifications"].([]any)
			}
			if len(ns) != 2 || ns[0].(map[string]any)["state"] != "delivered" || ns[1].(map[string]any)["state"] != "delivered" ||
				ns[1].(map[string]any)["kind"] != "cleared" {
				t.Fatalf("notifications %v", ns)
			}
		})
	}
}
