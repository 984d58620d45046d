package main

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

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// bind is a real BIND9 started by a test on a loopback port, with a TSIG key allowed to update and
// transfer its zones.
type bind struct {
	addr   string // 127.0.0.1:port
	secret string // the TSIG key's secret, base64
	other  string // a second key the server knows but never lets update
}

const keyName = "lexicon-test."

// findNamed returns named's path. Outside CI a missing named skips the test; with CI=true it fails it,
// because CI installs bind9 (.ci/run) and a skip there would hide a broken setup.
func findNamed(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"named", "/usr/sbin/named", "/usr/local/sbin/named"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("named (BIND9) is not installed; CI installs it with apt-get install bind9 in .ci/run")
	}
	t.Skip("named (BIND9) is not installed: apt-get install bind9 to run the RFC 2136 tests against a real server")
	return ""
}

// freePort returns a loopback port free for both TCP and UDP at the time of asking.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
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

func newSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// startBIND runs named in the foreground with a temporary config serving zones, and stops it when the
// test ends. It returns once named says it is running.
func startBIND(t *testing.T, zones ...string) *bind {
	t.Helper()
	named := findNamed(t)
	dir := t.TempDir()
	b := &bind{secret: newSecret(t), other: newSecret(t)}
	port := freePort(t)
	b.addr = fmt.Sprintf("127.0.0.1:%d", port)

	var conf strings.Builder
	fmt.Fprintf(&conf, `options {
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
key "other-key." { algorithm hmac-sha256; secret "%[5]s"; };
`, dir, port, keyName, b.secret, b.other)
	for _, z := range zones {
		file := filepath.Join(dir, z+".db")
		soa := fmt.Sprintf("$TTL 3600\n@ IN SOA ns.%[1]s. hostmaster.%[1]s. 1 3600 600 86400 300\n@ IN NS ns.%[1]s.\nns IN A 127.0.0.1\n", z)
		if err := os.WriteFile(file, []byte(soa), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&conf, "zone %q { type primary; file %q; allow-update { key %q; }; allow-transfer { key %q; }; };\n", z, file, keyName, keyName)
	}
	confPath := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(confPath, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(named, "-g", "-n", "1", "-c", confPath)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start named: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// named -g logs to stderr; "running" is its last word when it is ready to answer.
	ready := make(chan error, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled {
				log.WriteString(line + "\n")
			}
			if !signalled && strings.HasSuffix(line, " running") {
				signalled = true
				ready <- nil
			}
		}
		if !signalled {
			ready <- fmt.Errorf("named exited before it was running")
		}
	}()
	if err := testkit.Wait(t, ready, "named to start"); err != nil {
		t.Fatalf("%v:\n%s", err, log.String())
	}
	return b
}
