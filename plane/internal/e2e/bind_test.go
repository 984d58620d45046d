package e2e_test

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// named is a real BIND9 on a loopback port serving one zone that a person has already filled by hand,
// updatable with a TSIG key.
type named struct {
	addr, keyName, secret string
	log                   *testkit.Buffer // what named says, shown when the test fails
}

// handZone is the zone as its owner wrote it: the records the reconciler must leave alone.
const handZone = `$TTL 3600
@     IN SOA   ns.example.test. hostmaster.example.test. 1 3600 600 86400 300
@     IN NS    ns.example.test.
ns    IN A     127.0.0.1
www   IN A     192.0.2.10
@     IN TXT   "v=spf1 -all"
docs  IN CNAME pages.example.net.
`

// startNamed runs named in the foreground serving example.test from handZone. Outside CI a missing
// named skips the test; with CI=true it fails it (CI installs bind9 in .ci/run).
func startNamed(t testing.TB) *named {
	t.Helper()
	path := ""
	for _, p := range []string{"named", "/usr/sbin/named", "/usr/local/sbin/named"} {
		if found, err := exec.LookPath(p); err == nil {
			path = found
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("named (BIND9) is not installed; CI installs it with apt-get install bind9 in .ci/run")
		}
		t.Skip("named (BIND9) is not installed: apt-get install bind9 to run this test")
	}
	dir := t.TempDir()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	n := &named{keyName: "lexicon-e2e.", secret: base64.StdEncoding.EncodeToString(raw), log: &testkit.Buffer{}}
	port := freeDNSPort(t)
	n.addr = fmt.Sprintf("127.0.0.1:%d", port)
	zoneFile := filepath.Join(dir, "example.test.db")
	must(t, os.WriteFile(zoneFile, []byte(handZone), 0o644))
	conf := fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
};
controls { };
key "%[3]s" { algorithm hmac-sha256; secret "%[4]s"; };
zone "example.test" { type primary; file "%[5]s"; allow-update { key "%[3]s"; }; allow-transfer { key "%[3]s"; }; };
`, dir, port, n.keyName, n.secret, zoneFile)
	confPath := filepath.Join(dir, "named.conf")
	must(t, os.WriteFile(confPath, []byte(conf), 0o644))
	cmd := exec.Command(path, "-g", "-n", "1", "-c", confPath)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("named:\n%s", n.log.String())
		}
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(n.log, sc.Text())
			if !signalled && strings.HasSuffix(sc.Text(), " running") {
				signalled = true
				ready <- nil
			}
		}
		if !signalled {
			ready <- fmt.Errorf("named exited before it was running:\n%s", n.log.String())
		}
	}()
	must(t, testkit.Wait(t, ready, "named to start"))
	return n
}

// freeDNSPort returns a loopback port free for both TCP and UDP when asked.
func freeDNSPort(t testing.TB) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

// answers asks the server directly, outside Lexicon, for name's records of type qtype.
func (n *named) answers(t testing.TB, name string, qtype uint16) []string {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), qtype)
	r, err := mdns.Exchange(m, n.addr)
	must(t, err)
	var out []string
	for _, rr := range r.Answer {
		out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	return out
}

// TestReconcileLeavesHandMadeRecordsAlone reconciles a zone a person already filled, on a real BIND9,
// through the RFC 2136 driver on the plane: missing records are created, what is there is left, and
// each conflict is named, never overwritten. The TSIG secret appears in no log and no output.
func TestReconcileLeavesHandMadeRecordsAlone(t *testing.T) {
	ns := startNamed(t)
	f := newFleet(t, "sqlite", fleetOptions{})
	tr := &testkit.Buffer{}
	f.stageDrivers("dns-rfc2136")
	f.publishRelease(2)
	f.bindAccount(tr, ns)

	records := writeJSON(t, filepath.Join(f.dir, "records.json"), map[string]any{"records": []map[string]any{
		{"type": "A", "name": "www", "value": "192.0.2.99"},                     // a hand-made www A is there
		{"type": "A", "name": "api", "value": "192.0.2.20", "ttl": 300},         // missing
		{"type": "TXT", "name": "@", "value": "v=spf1 -all"},                    // there already
		{"type": "A", "name": "docs", "value": "192.0.2.30"},                    // docs is a hand-made CNAME
		{"type": "MX", "name": "@", "value": "mx.example.net.", "priority": 10}, // missing (out of zone: BIND refuses an in-zone MX target without an address)
	}})
	rep := f.cli(tr, 3, "dns", "reconcile", "--account", "bind", "--zone", "example.test", "--records-file", records)
	names := func(key string) []string {
		var out []string
		for _, r := range rep[key].([]any) {
			if c, ok := r.(map[string]any)["record"]; ok {
				r = c
			}
			out = append(out, r.(map[string]any)["type"].(string)+" "+r.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := strings.Join(names("created"), ","); got != "A api,MX @" {
		t.Errorf("created %s", got)
	}
	if got := strings.Join(names("present"), ","); got != "TXT @" {
		t.Errorf("present %s", got)
	}
	if got := strings.Join(names("conflicts"), ","); got != "A www,A docs" {
		t.Errorf("conflicts %s", got)
	}

	// Asked directly, the server still answers the person's records, and the new ones beside them.
	if got := ns.answers(t, "www.example.test", mdns.TypeA); len(got) != 1 || got[0] != "192.0.2.10" {
		t.Errorf("www A: %v", got)
	}
	if got := ns.answers(t, "docs.example.test", mdns.TypeCNAME); len(got) != 1 || got[0] != "pages.example.net." {
		t.Errorf("docs CNAME: %v", got)
	}
	if got := ns.answers(t, "api.example.test", mdns.TypeA); len(got) != 1 || got[0] != "192.0.2.20" {
		t.Errorf("api A: %v", got)
	}
	if got := ns.answers(t, "example.test", mdns.TypeMX); len(got) != 1 || got[0] != "10 mx.example.net." {
		t.Errorf("MX: %v", got)
	}
	if got := ns.answers(t, "example.test", mdns.TypeTXT); len(got) != 1 {
		t.Errorf("TXT: %v (the present record was duplicated?)", got)
	}

	// A second run creates nothing.
	again := f.cli(tr, 3, "dns", "reconcile", "--account", "bind", "--zone", "example.test", "--records-file", records)
	if len(again["created"].([]any)) != 0 || len(again["present"].([]any)) != 3 {
		t.Errorf("second run: %v", again)
	}
	if strings.Contains(f.plane.log(), ns.secret) || strings.Contains(tr.String(), ns.secret) {
		t.Fatal("the TSIG secret leaked into the plane's log or a command's output")
	}
}
