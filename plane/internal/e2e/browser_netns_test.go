package e2e_test

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"
)

// browserNetwork puts the test's Chromium in a network namespace of its own that holds only loopback,
// and returns the allocator options that do it. Chromium abandons every load in flight
// (net::ERR_NETWORK_CHANGED) whenever the addresses or links of its namespace change, and the netns
// tests of other packages add and remove veth pairs on this machine while the browser tests run: a
// form's POST dropped that way cannot be sent again blindly, and the page it led to never shows. In
// its own namespace the browser sees no change. It reaches the servers on the host's loopback
// (the plane, the OpenID provider) through a proxy this test runs: its listener lives in the
// browser's namespace, and it dials from the host's. The proxy carries loopback targets only.
//
// Making a namespace needs root; elsewhere the browser shares the host's network, and the test may
// then see such a dropped load.
func browserNetwork(t *testing.T) []chromedp.ExecAllocatorOption {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the browser's own network namespace needs root, which CI has")
		}
		t.Log("not root: the browser shares the host's network")
		return nil
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatalf("iproute2's ip: %v", err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	ns := "lexicon-browser-" + hex.EncodeToString(suffix[:])
	if out, err := exec.Command(ip, "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "delete", ns).Run() })
	if out, err := exec.Command(ip, "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("loopback up in %s: %v: %s", ns, err, out)
	}
	ln, err := listenIn("/run/netns/" + ns)
	if err != nil {
		t.Fatalf("the browser's proxy in %s: %v", ns, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(loopbackProxy)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return []chromedp.ExecAllocatorOption{
		chromedp.ProxyServer("http://" + ln.Addr().String()),
		// Chromium never proxies loopback unless told to.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// ip execs the browser in place, so the allocator's process, its pipes and the kill on
			// the test's exit are the browser's own.
			cmd.Args = append([]string{ip, "netns", "exec", ns}, cmd.Args...)
			cmd.Path = ip
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = new(syscall.SysProcAttr)
			}
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		}),
	}
}

// listenIn opens a loopback listener inside the network namespace at nsPath. A socket belongs to the
// namespace of the thread that made it, so one locked thread enters the namespace, listens, and
// returns; a thread that cannot return is never unlocked, and ends with its goroutine.
func listenIn(nsPath string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer host.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if unix.Setns(int(host.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{ln, err}
	}()
	r := <-done
	return r.ln, r.err
}

// loopbackProxy is the browser's way out of its namespace: a CONNECT tunnel for HTTPS, and a plain
// forward for HTTP, to the host's loopback only.
func loopbackProxy(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if host != "127.0.0.1" && host != "localhost" {
		http.Error(w, "the test's browser reaches loopback only", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodConnect {
		// The request line holds the whole URL already.
		(&httputil.ReverseProxy{Rewrite: func(*httputil.ProxyRequest) {}}).ServeHTTP(w, r)
		return
	}
	up, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer up.Close()
	down, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(up, buffered)
		_ = up.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(down, up)
}
