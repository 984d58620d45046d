package goplugin_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const credential = "dns-secret-9c1e4f7a2b6d"

var dnsSpec = goplugin.Spec{Name: "dns-test", Kind: driver.KindDNS}

func cfg() driver.Config {
	return driver.Config{Settings: []byte(`{"zones":["example.com","crash.test","hang.test","log.test"]}`), Credential: driver.NewSecret(credential)}
}

// startDNS starts the test DNS driver and stops it when the test ends.
func startDNS(t *testing.T, opts goplugin.Options) (*goplugin.Driver, *goplugin.DNS) {
	t.Helper()
	store, digest := storeWith(t, "dns")
	spec := dnsSpec
	spec.Digest = digest
	d, err := goplugin.Start(context.Background(), store, spec, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(d.Stop)
	n, err := d.DNS()
	if err != nil {
		t.Fatal(err)
	}
	return d, n
}

func TestDNSDriverConformsThroughTheHost(t *testing.T) {
	_, n := startDNS(t, goplugin.Options{})
	drivertest.RunDNSOn(t, n, cfg(), drivertest.DNSOptions{Zone: "example.com"})
}

func TestCloudDriverConformsThroughTheHost(t *testing.T) {
	store, digest := storeWith(t, "cloud")
	d, err := goplugin.Start(context.Background(), store, goplugin.Spec{Name: "cloud-test", Kind: driver.KindCloud, Digest: digest}, goplugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	c, err := d.Cloud()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DNS(); !errcode.Has(err, errcode.UsageInvalid) {
		t.Errorf("DNS() of a cloud driver = %v, want usage.invalid", err)
	}
	drivertest.RunCloudOn(t, c, driver.Config{Credential: driver.NewSecret(credential)}, drivertest.CloudOptions{
		Region: "test-1", Type: "small", Image: "debian-12", MissingID: "m-999999",
	})
}

// The example driver, built as its author would, runs under the host and passes the suite.
func TestOutsideAuthorsDriverConformsThroughTheHost(t *testing.T) {
	store, digest := storeWith(t, "memory")
	d, err := goplugin.Start(context.Background(), store, goplugin.Spec{Name: "dns-memory", Kind: driver.KindDNS, Digest: digest}, goplugin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	n, err := d.DNS()
	if err != nil {
		t.Fatal(err)
	}
	cfg := driver.Config{Settings: []byte(`{"zones": ["example.com"]}`), Credential: driver.NewSecret(credential)}
	drivertest.RunDNSOn(t, n, cfg, drivertest.DNSOptions{Zone: "example.com"})
}

// The process runs from the sealed memfd: its executable is anonymous memory, not a file anyone can
// replace.
func TestExecutesTheSealedMemfd(t *testing.T) {
	d, _ := startDNS(t, goplugin.Options{})
	pid := d.Status().PID
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(exe, "/memfd:lexicon-driver-dns-test") {
		t.Errorf("driver runs %q, want the sealed memfd", exe)
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	var clientCert string
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv != "" && !strings.HasPrefix(kv, "PLUGIN_") && !strings.HasPrefix(kv, driver.Handshake().MagicCookieKey) {
			t.Errorf("driver inherited %q from the host's environment", strings.SplitN(kv, "=", 2)[0])
		}
		if v, ok := strings.CutPrefix(kv, "PLUGIN_CLIENT_CERT="); ok {
			clientCert = v
		}
	}
	// AutoMTLS: go-plugin hands the driver the host's client certificate, which the driver's server
	// then requires of every connection.
	block, _ := pem.Decode([]byte(clientCert))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("driver was given no client certificate (PLUGIN_CLIENT_CERT=%q): the connection is not mutual TLS", clientCert)
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		t.Fatalf("PLUGIN_CLIENT_CERT: %v", err)
	}
}

func TestAlteredBlobIsRefusedBeforeExec(t *testing.T) {
	store, digest := storeWith(t, "dns")
	marker := filepath.Join(t.TempDir(), "executed")
	// Someone with write access to the store replaces the pinned driver with their own program.
	evil := "#!/bin/sh\ntouch " + marker + "\n"
	if err := os.WriteFile(store.Path(digest), []byte(evil), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := dnsSpec
	spec.Digest = digest
	_, err := goplugin.Start(context.Background(), store, spec, goplugin.Options{})
	testkit.WantCode(t, err, errcode.ModuleDigestMismatch)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the altered program ran")
	}
	spec.Digest = strings.Repeat("ab", 32)
	_, err = goplugin.Start(context.Background(), store, spec, goplugin.Options{})
	testkit.WantCode(t, err, errcode.ModuleNotFound)
}

// A fresh hasher on every start: the same driver starts twice (and a restart is a third start).
func TestStartTheSameDriverTwice(t *testing.T) {
	store, digest := storeWith(t, "dns")
	spec := dnsSpec
	spec.Digest = digest
	var pids []int
	for i := range 2 {
		d, err := goplugin.Start(context.Background(), store, spec, goplugin.Options{})
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		defer d.Stop()
		n, _ := d.DNS()
		if _, err := n.Info(context.Background()); err != nil {
			t.Fatalf("start %d: Info: %v", i+1, err)
		}
		pids = append(pids, d.Status().PID)
	}
	if pids[0] == pids[1] || pids[0] == 0 {
		t.Errorf("two starts gave pids %v, want two processes", pids)
	}
}

// A driver that speaks only a contract version this host does not is refused at the handshake.
func TestVersionsAreNegotiated(t *testing.T) {
	store, digest := storeWith(t, "future")
	_, err := goplugin.Start(context.Background(), store, goplugin.Spec{Name: "dns-future", Kind: driver.KindDNS, Digest: digest}, goplugin.Options{})
	testkit.WantCode(t, err, errcode.DriverVersionMismatch)
}

func TestKindMismatchIsRefused(t *testing.T) {
	store, digest := storeWith(t, "dns")
	_, err := goplugin.Start(context.Background(), store, goplugin.Spec{Name: "liar", Kind: driver.KindCloud, Digest: digest}, goplugin.Options{})
	testkit.WantCode(t, err, errcode.DriverStartFailed)
}

func TestCrashMidCallFailsThenRestarts(t *testing.T) {
	logs := &testkit.Buffer{}
	d, n := startDNS(t, goplugin.Options{Logger: logTo(logs), MinBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AppendRecords(ctx, "example.com", []dns.Record{{Type: "A", Name: "www", Value: "192.0.2.1"}}); err != nil {
		t.Fatal(err)
	}
	before := d.Status().PID

	_, err := n.GetRecords(ctx, "crash.test")
	testkit.WantCode(t, err, errcode.DriverCrashed)

	// The next call waits for the restart and finds the driver configured again (its in-memory zone
	// starts empty: it is a new process).
	recs, err := n.GetRecords(ctx, "example.com")
	if err != nil {
		t.Fatalf("call after the crash: %v", err)
	}
	if len(recs) != 0 {
		t.Errorf("a new process kept records: %v", recs)
	}
	st := d.Status()
	if st.State != goplugin.StateRunning || st.Restarts != 1 || st.PID == before || st.PID == 0 {
		t.Errorf("status after the crash = %+v (pid before %d): want running, 1 restart, a new pid", st, before)
	}
	logs.WaitFor(t, "driver lost its mind") // the driver's panic, in the host's log
	if out := logs.String(); strings.Contains(out, credential) {
		t.Errorf("the host logged the credential:\n%s", out)
	} else if !strings.Contains(out, "holding credential [REDACTED]") {
		t.Errorf("the panic line was not logged scrubbed:\n%s", out)
	}
}

func TestCallTimeout(t *testing.T) {
	d, n := startDNS(t, goplugin.Options{CallTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	pid := d.Status().PID
	_, err := n.GetRecords(ctx, "hang.test")
	testkit.WantCode(t, err, errcode.DriverTimeout)
	if _, err := n.ListZones(ctx); err != nil {
		t.Fatalf("a call after a timeout: %v", err)
	}
	if st := d.Status(); st.PID != pid || st.Restarts != 0 {
		t.Errorf("a timeout restarted the driver: %+v", st)
	}
}

func TestDisabledDriverCannotBeCalled(t *testing.T) {
	logs := &testkit.Buffer{}
	d, n := startDNS(t, goplugin.Options{Logger: logTo(logs)})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	pid := d.Status().PID
	// A call in flight when the driver is disabled fails as disabled too.
	inflight := make(chan error, 1)
	go func() {
		_, err := n.GetRecords(ctx, "hang.test")
		inflight <- err
	}()
	logs.WaitFor(t, "hang-test: holding the call") // the driver has received the call
	d.Stop()
	testkit.WantCode(t, <-inflight, errcode.DriverDisabled)

	_, err := n.ListZones(ctx)
	testkit.WantCode(t, err, errcode.DriverDisabled)
	testkit.WantCode(t, n.SetConfig(ctx, cfg()), errcode.DriverDisabled)
	if st := d.Status(); st.State != goplugin.StateDisabled || st.PID != 0 {
		t.Errorf("status after Stop = %+v", st)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the driver process %d is still there after Stop (kill -0: %v)", pid, err)
	}
	d.Stop() // again: nothing happens
}

func TestDriverLogsNeverCarryTheCredential(t *testing.T) {
	logs := &testkit.Buffer{}
	_, n := startDNS(t, goplugin.Options{Logger: logTo(logs)})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.GetRecords(ctx, "log.test"); err != nil {
		t.Fatal(err)
	}
	logs.WaitFor(t, "log-test: the credential is")
	if out := logs.String(); strings.Contains(out, credential) || !strings.Contains(out, "the credential is [REDACTED]") {
		t.Errorf("the driver's log line was not scrubbed:\n%s", out)
	}
	// A refused config is scrubbed on its way back too.
	err := n.SetConfig(ctx, driver.Config{Settings: []byte(`{"zones":["` + credential + ` !"]}`), Credential: driver.NewSecret(credential)})
	testkit.WantCode(t, err, errcode.DriverConfigInvalid)
	if strings.Contains(err.Error(), credential) {
		t.Errorf("an error carried the credential back: %v", err)
	}
}

// TestBareStatusIsScrubbedThroughTheWholeChain: a driver answers with a bare gRPC status holding its
// credential (no Lexicon detail, so the host wraps it as a transport error). Neither the error's text,
// which the plane logs, nor any error of its chain, nor its details carry the credential.
func TestBareStatusIsScrubbedThroughTheWholeChain(t *testing.T) {
	_, n := startDNS(t, goplugin.Options{})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	_, err := n.GetRecords(ctx, "status.test")
	testkit.WantCode(t, err, errcode.DriverInternal)
	if !strings.Contains(err.Error(), "provider refused the token [REDACTED]") {
		t.Errorf("the driver's answer is lost rather than scrubbed: %v", err)
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if text := fmt.Sprintf("%v %+v", e, e); strings.Contains(text, credential) {
			t.Errorf("an error of the chain (%T) carries the credential: %s", e, text)
		}
	}
	var te *driver.TransportError
	if !errors.As(err, &te) || strings.Contains(te.Message, credential) {
		t.Errorf("the transport error is not kept scrubbed: %#v", te)
	}
}

// TestCallsTimingOutInARowRestartTheDriver: a driver that is alive but answers nothing is restarted
// after MaxTimeouts calls in a row time out, with its config replayed; fewer timeouts leave it be.
func TestCallsTimingOutInARowRestartTheDriver(t *testing.T) {
	logs := &testkit.Buffer{}
	d, n := startDNS(t, goplugin.Options{Logger: logTo(logs), CallTimeout: 300 * time.Millisecond, MaxTimeouts: 2, MinBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	if err := n.SetConfig(ctx, cfg()); err != nil {
		t.Fatal(err)
	}
	pid := d.Status().PID
	_, err := n.GetRecords(ctx, "hang.test")
	testkit.WantCode(t, err, errcode.DriverTimeout)
	if st := d.Status(); st.PID != pid || st.Restarts != 0 || st.Timeouts != 1 {
		t.Fatalf("after one timeout: %+v", st)
	}
	_, err = n.GetRecords(ctx, "hang.test")
	testkit.WantCode(t, err, errcode.DriverTimeout)
	logs.WaitFor(t, "driver restarted")
	// The restarted process has the account's config again and answers.
	if _, err := n.ListZones(ctx); err != nil {
		t.Fatalf("a call after the restart: %v", err)
	}
	st := d.Status()
	if st.State != goplugin.StateRunning || st.Restarts != 1 || st.PID == pid || st.Timeouts != 0 {
		t.Fatalf("status after the restart = %+v (pid before %d)", st, pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the stuck process %d is still there (kill -0: %v)", pid, err)
	}
}
