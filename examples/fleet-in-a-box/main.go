// Command fleet-in-a-box is `make demo`: it signs a throwaway release of the built-in words and this
// tree's agent, logs it in a test transparency log as a publisher logs into theirs (nodes and the
// plane then require a log entry), starts a plane on SQLite and one agent on this machine, pairs them
// the way an admin would (comparing fingerprints), runs host_report and disk_usage, and leaves the
// plane running, with the address of its web UI. On the way it prints the command that enrols a
// second machine, assigns a small role to its node and shows the footprint, and shows the node's row
// of the fleet security page. Run as root where network namespaces can be made, it
// also provisions one more machine through the netns cloud (plugins/cloud/netns) and runs host_report
// on it; with the Debian root too (make debian-root), it makes a debian-12 machine with a critical
// security fix waiting, shows its security row red, patches it with fleet patch and shows it green.
// Elsewhere it says why not and goes on. DEMO_ONESHOT=1 runs the scenario and exits.
//
// The agent runs from its own copy of the binary under a supervisor that restarts it as its systemd
// unit does on a machine (supervise.go), so it comes back after it updates itself from a release.
//
// It drives only the real binaries in build/bin, exactly as a person at a shell would. DEMO_LISTEN
// (default 127.0.0.1:8443) is where the plane listens: a port already taken is refused before
// anything starts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var (
	bin     = envOr("DEMO_BIN", "build/bin")
	modules = envOr("DEMO_MODULES", "build/modules")
	dir     = envOr("DEMO_DIR", "build/demo")
	listen  = envOr("DEMO_LISTEN", "127.0.0.1:8443")
	// netnsRange is the private range of the demo's netns cloud; its first address is the gateway
	// the provisioned machine reaches the plane on.
	netnsRange, netnsGateway = envOr("DEMO_NETNS_RANGE", "10.213.200.0/24"), envOr("DEMO_NETNS_GATEWAY", "10.213.200.1")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	if err := demo(nil); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// running is the demo's fleet once it is up, for what runs before the demo ends (then).
type running struct {
	admin   func(args ...string) (map[string]any, error)
	nodeID  string
	agent   *supervisor
	keys    string // the throwaway publisher's key folder
	release string // the release the demo published, sequence 1
	modules string // the modules it was built from
	// version and platform are those of the agent the release pins, which the demo's agent runs.
	version, platform string
	// log logs a release in the demo's test transparency log, which nodes require.
	log func(release string) error
}

func step(format string, args ...any) { fmt.Fprintf(stdout, "\n==> "+format+"\n", args...) }

// demo runs the scenario; then, when set, runs on the fleet before the demo stops it (DEMO_ONESHOT)
// or waits for Ctrl-C.
func demo(then func(ctx context.Context, r *running) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	keys, release := filepath.Join(dir, "keys"), filepath.Join(dir, "release")
	planeData, agentState, agentConfig := filepath.Join(dir, "plane"), filepath.Join(dir, "agent", "state"), filepath.Join(dir, "agent", "config")
	agentExe := filepath.Join(dir, "agent", "bin", "lexicon-agent")

	// The netns cloud's machine reaches the plane on the range's gateway, which exists only once an
	// instance does: the plane then listens on every address, and tells provisioned machines the
	// gateway.
	netnsWhy := netnsUnavailable()
	planeListen, planeArgs := listen, []string(nil)
	if netnsWhy == "" {
		_, port, err := net.SplitHostPort(listen)
		if err != nil {
			return err
		}
		planeListen = net.JoinHostPort("0.0.0.0", port)
		planeArgs = []string{"--provision-url", "https://" + net.JoinHostPort(netnsGateway, port), "--tls-names", netnsGateway}
	}
	// Before the last demo's folder is removed: that demo may still be running on the address.
	if err := portFree(planeListen); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	// The agent runs from a copy it may replace when it updates itself, never from build/bin.
	if err := install(filepath.Join(bin, "lexicon-agent"), agentExe); err != nil {
		return err
	}
	ver, err := jsonOf("lexicon-agent", "version")
	if err != nil {
		return err
	}
	agentVersion, _ := ver["version"].(string)
	agentPlatform := strings.Replace(fmt.Sprint(ver["platform"]), "-", "/", 1)

	step("a throwaway publisher key, and a signed release of the built-in words")
	if _, err := jsonOf("lexicon-release", "keygen", "--out", keys, "--name", "demo"); err != nil {
		return err
	}
	// The release pins this tree's agent under its own version: provisioning installs it, and the
	// demo's agent finds it is the one it runs.
	relModules := filepath.Join(dir, "modules")
	if err := releaseModules(modules, relModules); err != nil {
		return err
	}
	rel, err := jsonOf("lexicon-release", "build", "--key", filepath.Join(keys, "demo.key"), "--modules", relModules,
		"--release", agentVersion, "--sequence", "1", "--out", release, "--agent", agentPlatform+"="+agentExe)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %v: %d modules and the agent for %s, statement %v\n", rel["release"], len(rel["modules"].([]any)), agentPlatform, rel["statement"])
	fmt.Fprintln(stdout, "restart_services may also restart lexfix-*.service (the Debian machine's daemon), as a site's own release adds its units")

	step("the release logged in a test transparency log, with a signed timestamp (in memory: the bundle keeps its proofs)")
	logKey, tsaChain := filepath.Join(dir, "log.pub"), filepath.Join(dir, "tsa.pem")
	logURL, logRelease, stopLog, err := startTestLog(logKey, tsaChain)
	if err != nil {
		return err
	}
	defer stopLog()
	if err := logRelease(release); err != nil {
		return err
	}
	for _, trust := range []string{filepath.Join(planeData, "trust"), filepath.Join(agentConfig, "trust")} {
		if _, err := jsonOf("lexicon-release", "trust", "init", "--out", trust, "--key", filepath.Join(keys, "demo.pub"),
			"--log-key", logKey, "--tsa-chain", tsaChain); err != nil {
			return err
		}
	}

	step("a plane on SQLite at %s, reading the test log", planeListen)
	// The plane reads the log, as a fleet's does: an agent holding the checkpoint of one release asks
	// it for the proof that a later release's checkpoint extends it, and refuses the release without.
	plane := exec.Command(filepath.Join(bin, "lexicon-plane"), append([]string{"serve", "--listen", planeListen, "--data", planeData, "-o", "json", "--log-url", logURL}, planeArgs...)...)
	// Its own process group: Ctrl-C reaches the demo only, which decommissions what it provisioned
	// through the plane before stopping it.
	plane.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	plane.Stderr = logFile(filepath.Join(dir, "plane.log"))
	out, _ := plane.StdoutPipe()
	if err := plane.Start(); err != nil {
		return err
	}
	defer stopProc(plane)
	// One JSON document: the ready line, or the refusal that stopped the plane.
	var ready struct {
		URL           string `json:"url"`
		CA            string `json:"ca"`
		CAFingerprint string `json:"ca_fingerprint"`
		Code          string `json:"code"`
		Message       string `json:"message"`
	}
	if err := json.NewDecoder(out).Decode(&ready); err != nil || ready.URL == "" {
		if ready.Code != "" {
			hint := ""
			if strings.Contains(ready.Message, "listen") {
				hint = "; " + listenHint
			}
			return fmt.Errorf("the plane did not start: %s%s (log: %s)", ready.Message, hint, filepath.Join(dir, "plane.log"))
		}
		return fmt.Errorf("the plane did not start; see %s", filepath.Join(dir, "plane.log"))
	}
	if h, port, err := net.SplitHostPort(strings.TrimPrefix(ready.URL, "https://")); err == nil && net.ParseIP(h).IsUnspecified() {
		ready.URL = "https://" + net.JoinHostPort("127.0.0.1", port) // on every address; the CLI asks on loopback
	}
	fmt.Fprintf(stdout, "plane %s, CA %s (fingerprint %s)\nweb UI %s/ui/\n", ready.URL, ready.CA, ready.CAFingerprint, ready.URL)
	if netnsWhy == "" {
		fmt.Fprintf(stdout, "it listens on every address: the netns cloud's machine reaches it at %s\n", planeArgs[1])
	}
	tok, err := jsonOf("lexicon-plane", "token", "create", "--role", "admin", "--name", "demo-admin", "--data", planeData)
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte(tok["token"].(string)+"\n"), 0o600); err != nil {
		return err
	}
	admin := func(args ...string) (map[string]any, error) {
		return jsonOf("lexicon", append(args, "--plane", ready.URL, "--ca", ready.CA, "--token-file", tokenFile)...)
	}
	if _, err := admin("releases", "publish", release); err != nil {
		return err
	}

	step("an agent on this machine asks to join")
	if err := os.MkdirAll(agentConfig, 0o755); err != nil {
		return err
	}
	// Converge may write beneath one folder of the demo's, where the demo's role puts its file.
	convergeRoot, err := filepath.Abs(filepath.Join(dir, "converge"))
	if err != nil {
		return err
	}
	policy, _ := json.Marshal(map[string]any{"classes": map[string]string{"look": "accept", "change": "accept", "destructive": "refuse"},
		"converge": map[string]any{"paths": []string{convergeRoot}}})
	if err := os.WriteFile(filepath.Join(agentConfig, "policy.json"), policy, 0o644); err != nil {
		return err
	}
	agentDirs := []string{"--state-dir", agentState, "--config-dir", agentConfig}
	join, err := jsonOf("lexicon-agent", append([]string{"join", "--plane", ready.URL, "--ca", ready.CA, "--name", "demo-node", "--no-wait"}, agentDirs...)...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the agent shows fingerprint %v\n", join["fingerprint"])

	step("the admin compares fingerprints and approves")
	joins, err := admin("joins", "list")
	if err != nil {
		return err
	}
	var seen string
	for _, j := range joins["joins"].([]any) {
		if j.(map[string]any)["id"] == join["join_id"] {
			seen = j.(map[string]any)["fingerprint"].(string)
		}
	}
	fmt.Fprintf(stdout, "the plane shows  fingerprint %s\n", seen)
	if seen != join["fingerprint"] {
		return errors.New("the fingerprints differ: not approving")
	}
	approved, err := admin("joins", "approve", join["join_id"].(string), "--fingerprint", seen)
	if err != nil {
		return err
	}
	nodeID := approved["node"].(map[string]any)["id"].(string)
	if _, err := jsonOf("lexicon-agent", append([]string{"status"}, agentDirs...)...); err != nil {
		return err
	}
	var agentLog io.Writer = logFile(filepath.Join(dir, "agent.log"))
	if agentTee != nil {
		agentLog = io.MultiWriter(agentLog, agentTee)
	}
	agent := supervise(agentExe, agentDirs, agentLog)
	defer agent.stop()
	fmt.Fprintf(stdout, "node %s approved; the agent runs under a supervisor that restarts it as systemd would (log: %s)\n", nodeID, filepath.Join(dir, "agent.log"))
	if err := waitVocabulary(ctx, admin, nodeID); err != nil {
		return err
	}

	for _, job := range [][]string{{"host_report"}, {"disk_usage", "--param", "root=/var", "--param", "top:=5"}} {
		step("run %s", job[0])
		res, err := admin(append([]string{"jobs", "run", nodeID}, append(job, "--wait")...)...)
		if err != nil {
			return err
		}
		pretty, _ := json.MarshalIndent(map[string]any{"state": res["state"], "output": res["output"], "duration_ms": res["duration_ms"]}, "", "  ")
		fmt.Fprintln(stdout, string(pretty))
		if res["state"] != "completed" {
			return fmt.Errorf("%s ended %v: %v %v", job[0], res["state"], res["outcome_code"], res["outcome_message"])
		}
	}

	var summary []string
	step("a second machine: the command that enrols one that already exists")
	line, err := installCommand(admin, agentPlatform)
	if err != nil {
		return err
	}
	summary = append(summary, line)

	step("a small role on %s, and its footprint", "demo-node")
	node, err := admin("nodes", "show", nodeID)
	if err != nil {
		return err
	}
	if line, err = assignRole(admin, node, convergeRoot); err != nil {
		return err
	}
	summary = append(summary, line)

	step("the fleet security page")
	if line, err = fleetSecurity(admin, ready.URL, nodeID); err != nil {
		return err
	}
	summary = append(summary, line)

	step("one more machine, made through the netns cloud")
	if netnsWhy != "" {
		fmt.Fprintf(stdout, "skipped: %s\n", netnsWhy)
	} else {
		debianWhy := debianUnavailable()
		undo, err := provisionNetns(ctx, admin, debianWhy == "")
		if undo != nil {
			defer undo()
		}
		if err != nil {
			return err
		}
		step("a Debian machine with a critical fix waiting: red, fleet patch, green")
		if debianWhy != "" {
			fmt.Fprintf(stdout, "skipped: %s\n", debianWhy)
		} else {
			undo, err := debianNode(ctx, admin, ready.URL)
			if undo != nil {
				defer undo()
			}
			if err != nil {
				return err
			}
		}
	}

	if then != nil {
		if err := then(ctx, &running{admin: admin, nodeID: nodeID, agent: agent, keys: keys, release: release, modules: relModules,
			version: agentVersion, platform: agentPlatform, log: logRelease}); err != nil {
			return err
		}
	}

	step("done")
	fmt.Fprintf(stdout, "plane: %s\n  export LEXICON_PLANE=%s LEXICON_CA=%s LEXICON_TOKEN_FILE=%s\n  %s/lexicon nodes list\n",
		ready.URL, ready.URL, ready.CA, tokenFile, bin)
	fmt.Fprintf(stdout, "web UI: %s/ui/ (sign in with the token in %s; the browser warns of the plane's own CA, fingerprint %s)\n",
		ready.URL, tokenFile, ready.CAFingerprint)
	for _, line := range summary {
		fmt.Fprintln(stdout, line)
	}
	if os.Getenv("DEMO_ONESHOT") != "" {
		return nil
	}
	fmt.Fprintln(stdout, "the plane and the agent keep running; Ctrl-C stops them")
	<-ctx.Done()
	return nil
}

// netnsUnavailable says why the netns cloud cannot run here ("" when it can): it needs root, iproute2
// and curl, and a kernel that lets this process make a network namespace.
func netnsUnavailable() string {
	if os.Getenv("DEMO_NETNS") == "0" {
		return "DEMO_NETNS=0"
	}
	if os.Geteuid() != 0 {
		return "the netns cloud needs root (its machines are network namespaces on this one)"
	}
	for _, tool := range [][]string{{"/usr/sbin/ip", "/sbin/ip"}, {"/usr/bin/unshare", "/bin/unshare"}, {"/usr/bin/curl", "/bin/curl"}} {
		found := false
		for _, p := range tool {
			if _, err := os.Stat(p); err == nil {
				found = true
			}
		}
		if !found {
			return tool[0] + " is missing (apt-get install iproute2 util-linux curl)"
		}
	}
	if out, err := exec.Command("unshare", "--net", "true").CombinedOutput(); err != nil {
		return fmt.Sprintf("this machine does not let it make a network namespace: %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// provisionNetns enables the netns cloud driver, adds an account for it, provisions one machine with
// DNS-less defaults and runs host_report on it. undo decommissions the machine (its namespace and
// agent outlive the plane otherwise).
func provisionNetns(ctx context.Context, admin func(...string) (map[string]any, error), debian bool) (undo func(), err error) {
	if _, err := admin("drivers", "enable", "cloud-netns", "--unconfined"); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(filepath.Join(dir, "netns"))
	if err != nil {
		return nil, err
	}
	settings, cred := filepath.Join(dir, "netns.json"), filepath.Join(dir, "netns.credential")
	s := map[string]any{"root": root, "range": netnsRange, "test": true}
	if debian {
		image, err := filepath.Abs(debianRoot)
		if err != nil {
			return nil, err
		}
		s["images"] = map[string]string{"debian-12": image} // beside the host image
	}
	raw, _ := json.Marshal(s)
	if err := os.WriteFile(settings, raw, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cred, []byte("local\n"), 0o600); err != nil {
		return nil, err
	}
	if _, err := admin("accounts", "add", "--driver", "cloud-netns", "--name", "local", "--credential-file", cred, "--settings-file", settings); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "cloud-netns enabled (unconfined: it runs as root to make namespaces); account local, range %s, state %s\n", netnsRange, root)
	start := time.Now()
	p, err := admin("nodes", "provision", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "host",
		"--name", "demo-ns-1", "--labels", "demo=netns", "--wait")
	if p != nil && p["instance_id"] != nil {
		undo = func() {
			if _, err := admin("nodes", "decommission", "demo-ns-1", "--confirm", "demo-ns-1"); err != nil {
				fmt.Fprintf(os.Stderr, "demo: decommission demo-ns-1: %v (delete its instance with lexicon cloud delete)\n", err)
				return
			}
			fmt.Fprintln(stdout, "demo-ns-1 decommissioned: its instance (namespace and agent) deleted, the node disconnected")
		}
	}
	if err != nil {
		return undo, err
	}
	nodeID := p["node_id"].(string)
	fmt.Fprintf(stdout, "node %s joined from %v in %s: the plane approved it because the netns cloud reports that address for instance %v\n",
		nodeID, p["addresses"], time.Since(start).Round(time.Millisecond), p["instance_id"])
	if err := waitVocabulary(ctx, admin, nodeID); err != nil {
		return undo, err
	}
	res, err := admin("jobs", "run", nodeID, "host_report", "--wait")
	if err != nil {
		return undo, err
	}
	out, _ := res["output"].(map[string]any)
	fmt.Fprintf(stdout, "host_report on demo-ns-1: %v (hostname %v), %s after provision\n", res["state"], out["hostname"], time.Since(start).Round(time.Millisecond))
	if res["state"] != "completed" {
		return undo, fmt.Errorf("host_report on demo-ns-1 ended %v: %v %v", res["state"], res["outcome_code"], res["outcome_message"])
	}
	fmt.Fprintln(stdout, "it is decommissioned (instance and node) when the demo stops")
	return undo, nil
}

func waitVocabulary(ctx context.Context, admin func(...string) (map[string]any, error), node string) error {
	n, err := waitNode(ctx, admin, node, "the node did not report a vocabulary; see agent.log", func(n map[string]any) bool {
		v, _ := n["vocabulary"].([]any)
		return len(v) > 0
	})
	if err == nil {
		fmt.Fprintf(stdout, "the node loaded %d words from the verified statement\n", len(n["vocabulary"].([]any)))
	}
	return err
}

// waitNode asks the plane for the node until done says it is as awaited, for two minutes at most.
func waitNode(ctx context.Context, admin func(...string) (map[string]any, error), node, timeout string, done func(map[string]any) bool) (map[string]any, error) {
	var n map[string]any
	err := poll(ctx, 2*time.Minute, timeout, func() (bool, error) {
		var err error
		n, err = admin("nodes", "show", node)
		return err == nil && done(n), err
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// jsonOf runs a binary with -o json and decodes its answer; a failure shows the coded error.
func jsonOf(name string, args ...string) (map[string]any, error) {
	cmd := exec.Command(filepath.Join(bin, name), append(args, "-o", "json")...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var m map[string]any
	if jerr := json.Unmarshal(out, &m); jerr != nil {
		return nil, fmt.Errorf("%s %s: %v %s", name, strings.Join(args, " "), err, out)
	}
	if err != nil {
		return m, fmt.Errorf("%s %s: %v: %v", name, args[0], m["code"], m["message"])
	}
	return m, nil
}

// stdout is where the demo tells what it does (a test reads it too).
var stdout io.Writer = os.Stdout

// agentTee, when set, also gets every line the agent and its supervisor log (for tests).
var agentTee io.Writer

// listenHint says how to choose where the plane listens.
const listenHint = "choose another address with DEMO_LISTEN, e.g. DEMO_LISTEN=127.0.0.1:9443 make demo"

// portFree refuses an address something already listens on, saying how to choose another, before the
// demo starts anything.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s is taken (another make demo, or another plane?): %s", addr, listenHint)
		}
		return fmt.Errorf("cannot listen on %s: %w; %s", addr, err, listenHint)
	}
	return ln.Close()
}

// install copies the binary at src to dst, executable, making its folder.
func install(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("build the binaries first (make build): %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// startTestLog starts `lexicon-release testlog` on a free port, which serves at logURL; logRelease logs a release in it with a
// timestamp from its authority, and stop ends it. The log keeps nothing, but each bundle logged
// carries the entry's inclusion proof, signed checkpoint and timestamp, which verify offline against
// the log key and authority chain it wrote to logKey and tsaChain. It runs as long as the demo, so
// a later release is logged in the same log, as a publisher's are.
func startTestLog(logKey, tsaChain string) (logURL string, logRelease func(release string) error, stop func(), err error) {
	testlog := exec.Command(filepath.Join(bin, "lexicon-release"), "testlog", "--listen", "127.0.0.1:0",
		"--log-key-out", logKey, "--tsa-chain-out", tsaChain, "-o", "json")
	testlog.Stderr = logFile(filepath.Join(dir, "testlog.log"))
	out, _ := testlog.StdoutPipe()
	if err := testlog.Start(); err != nil {
		return "", nil, nil, err
	}
	stop = func() { stopProc(testlog) }
	var ready struct {
		URL    string `json:"url"`
		TSAURL string `json:"tsa_url"`
	}
	if err := json.NewDecoder(out).Decode(&ready); err != nil || ready.URL == "" {
		stop()
		return "", nil, nil, fmt.Errorf("the test log did not start; see %s", filepath.Join(dir, "testlog.log"))
	}
	logRelease = func(release string) error {
		logged, err := jsonOf("lexicon-release", "log", "--rekor", ready.URL, "--tsa", ready.TSAURL, release)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "logged at index %v of %v in %s\n", logged["log_index"], logged["tree_size"], ready.URL)
		return nil
	}
	return ready.URL, logRelease, stop, nil
}

func logFile(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		return os.Stderr
	}
	return f
}

func stopProc(c *exec.Cmd) {
	if c.Process != nil {
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = c.Process.Kill()
		}
	}
}
