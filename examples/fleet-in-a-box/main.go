// Command fleet-in-a-box is `make demo`: it signs a throwaway release of the built-in words, logs it in
// a test transparency log as a publisher logs into theirs (nodes and the plane then require a log
// entry), starts a plane on SQLite and one agent on this machine, pairs them the way an admin would (comparing
// fingerprints), runs host_report and disk_usage, and leaves the plane running. Run as root where
// network namespaces can be made, it also provisions one more machine through the netns cloud
// (plugins/cloud/netns) and runs host_report on it; elsewhere it says why not and goes on. DEMO_ONESHOT=1
// runs the scenario and exits.
//
// It drives only the real binaries in build/bin, exactly as a person at a shell would.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	if err := demo(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

func demo() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	keys, release := filepath.Join(dir, "keys"), filepath.Join(dir, "release")
	planeData, agentState, agentConfig := filepath.Join(dir, "plane"), filepath.Join(dir, "agent", "state"), filepath.Join(dir, "agent", "config")

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

	step("a throwaway publisher key, and a signed release of the built-in words")
	if _, err := jsonOf("lexicon-release", "keygen", "--out", keys, "--name", "demo"); err != nil {
		return err
	}
	buildArgs := []string{"build", "--key", filepath.Join(keys, "demo.key"), "--modules", modules,
		"--release", "0.1.0", "--sequence", "1", "--out", release}
	if netnsWhy == "" {
		// Provisioning installs the agent the release pins: this tree's.
		buildArgs = append(buildArgs, "--agent", "linux/amd64="+filepath.Join(bin, "lexicon-agent"))
	}
	rel, err := jsonOf("lexicon-release", buildArgs...)
	if err != nil {
		return err
	}
	fmt.Printf("release %v: %d modules, statement %v\n", rel["release"], len(rel["modules"].([]any)), rel["statement"])

	step("the release logged in a test transparency log, with a signed timestamp (in memory: the bundle keeps its proofs)")
	logKey, tsaChain := filepath.Join(dir, "log.pub"), filepath.Join(dir, "tsa.pem")
	if err := logRelease(release, logKey, tsaChain); err != nil {
		return err
	}
	for _, trust := range []string{filepath.Join(planeData, "trust"), filepath.Join(agentConfig, "trust")} {
		if _, err := jsonOf("lexicon-release", "trust", "init", "--out", trust, "--key", filepath.Join(keys, "demo.pub"),
			"--log-key", logKey, "--tsa-chain", tsaChain); err != nil {
			return err
		}
	}

	step("a plane on SQLite at %s", planeListen)
	plane := exec.Command(filepath.Join(bin, "lexicon-plane"), append([]string{"serve", "--listen", planeListen, "--data", planeData, "-o", "json"}, planeArgs...)...)
	// Its own process group: Ctrl-C reaches the demo only, which decommissions what it provisioned
	// through the plane before stopping it.
	plane.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	plane.Stderr = logFile(filepath.Join(dir, "plane.log"))
	out, _ := plane.StdoutPipe()
	if err := plane.Start(); err != nil {
		return err
	}
	defer stopProc(plane)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the plane did not start; see %s", filepath.Join(dir, "plane.log"))
	}
	var ready struct {
		URL           string `json:"url"`
		CA            string `json:"ca"`
		CAFingerprint string `json:"ca_fingerprint"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		return err
	}
	if h, port, err := net.SplitHostPort(strings.TrimPrefix(ready.URL, "https://")); err == nil && net.ParseIP(h).IsUnspecified() {
		ready.URL = "https://" + net.JoinHostPort("127.0.0.1", port) // on every address; the CLI asks on loopback
	}
	fmt.Printf("plane %s, CA %s (fingerprint %s)\n", ready.URL, ready.CA, ready.CAFingerprint)
	if netnsWhy == "" {
		fmt.Printf("it listens on every address: the netns cloud's machine reaches it at %s\n", planeArgs[1])
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
	policy := `{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}}`
	if err := os.WriteFile(filepath.Join(agentConfig, "policy.json"), []byte(policy), 0o644); err != nil {
		return err
	}
	agentDirs := []string{"--state-dir", agentState, "--config-dir", agentConfig}
	join, err := jsonOf("lexicon-agent", append([]string{"join", "--plane", ready.URL, "--ca", ready.CA, "--name", "demo-node", "--no-wait"}, agentDirs...)...)
	if err != nil {
		return err
	}
	fmt.Printf("the agent shows fingerprint %v\n", join["fingerprint"])

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
	fmt.Printf("the plane shows  fingerprint %s\n", seen)
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
	agent := exec.CommandContext(ctx, filepath.Join(bin, "lexicon-agent"), append([]string{"run"}, agentDirs...)...)
	agent.Stderr = logFile(filepath.Join(dir, "agent.log"))
	if err := agent.Start(); err != nil {
		return err
	}
	defer stopProc(agent)
	fmt.Printf("node %s approved; the agent runs (log: %s)\n", nodeID, filepath.Join(dir, "agent.log"))
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
		fmt.Println(string(pretty))
		if res["state"] != "completed" {
			return fmt.Errorf("%s ended %v: %v %v", job[0], res["state"], res["outcome_code"], res["outcome_message"])
		}
	}

	step("one more machine, made through the netns cloud")
	if netnsWhy != "" {
		fmt.Printf("skipped: %s\n", netnsWhy)
	} else {
		undo, err := provisionNetns(ctx, admin)
		if undo != nil {
			defer undo()
		}
		if err != nil {
			return err
		}
	}

	step("done")
	fmt.Printf("plane: %s\n  export LEXICON_PLANE=%s LEXICON_CA=%s LEXICON_TOKEN_FILE=%s\n  %s/lexicon nodes list\n",
		ready.URL, ready.URL, ready.CA, tokenFile, bin)
	if os.Getenv("DEMO_ONESHOT") != "" {
		return nil
	}
	fmt.Println("the plane and the agent keep running; Ctrl-C stops them")
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
func provisionNetns(ctx context.Context, admin func(...string) (map[string]any, error)) (undo func(), err error) {
	if _, err := admin("drivers", "enable", "cloud-netns", "--unconfined"); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(filepath.Join(dir, "netns"))
	if err != nil {
		return nil, err
	}
	settings, cred := filepath.Join(dir, "netns.json"), filepath.Join(dir, "netns.credential")
	if err := os.WriteFile(settings, []byte(fmt.Sprintf(`{"root": %q, "range": %q, "test": true}`, root, netnsRange)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cred, []byte("local\n"), 0o600); err != nil {
		return nil, err
	}
	if _, err := admin("accounts", "add", "--driver", "cloud-netns", "--name", "local", "--credential-file", cred, "--settings-file", settings); err != nil {
		return nil, err
	}
	fmt.Printf("cloud-netns enabled (unconfined: it runs as root to make namespaces); account local, range %s, state %s\n", netnsRange, root)
	start := time.Now()
	p, err := admin("nodes", "provision", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "host",
		"--name", "demo-ns-1", "--labels", "demo=netns", "--wait")
	if p != nil && p["instance_id"] != nil {
		undo = func() {
			if _, err := admin("nodes", "decommission", "demo-ns-1", "--confirm", "demo-ns-1"); err != nil {
				fmt.Fprintf(os.Stderr, "demo: decommission demo-ns-1: %v (delete its instance with lexicon cloud delete)\n", err)
				return
			}
			fmt.Println("demo-ns-1 decommissioned: its instance (namespace and agent) deleted, the node disconnected")
		}
	}
	if err != nil {
		return undo, err
	}
	nodeID := p["node_id"].(string)
	fmt.Printf("node %s joined from %v in %s: the plane approved it because the netns cloud reports that address for instance %v\n",
		nodeID, p["addresses"], time.Since(start).Round(time.Millisecond), p["instance_id"])
	if err := waitVocabulary(ctx, admin, nodeID); err != nil {
		return undo, err
	}
	res, err := admin("jobs", "run", nodeID, "host_report", "--wait")
	if err != nil {
		return undo, err
	}
	out, _ := res["output"].(map[string]any)
	fmt.Printf("host_report on demo-ns-1: %v (hostname %v), %s after provision\n", res["state"], out["hostname"], time.Since(start).Round(time.Millisecond))
	if res["state"] != "completed" {
		return undo, fmt.Errorf("host_report on demo-ns-1 ended %v: %v %v", res["state"], res["outcome_code"], res["outcome_message"])
	}
	fmt.Println("it is decommissioned (instance and node) when the demo stops")
	return undo, nil
}

func waitVocabulary(ctx context.Context, admin func(...string) (map[string]any, error), node string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		n, err := admin("nodes", "show", node)
		if err != nil {
			return err
		}
		if v, _ := n["vocabulary"].([]any); len(v) > 0 {
			fmt.Printf("the node loaded %d words from the verified statement\n", len(v))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("the node did not report a vocabulary; see agent.log")
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

// logRelease starts `lexicon-release testlog` on a free port, logs the release in it with a timestamp
// from its authority, and stops it. The log keeps nothing, but the bundle now carries the entry's
// inclusion proof, signed checkpoint and timestamp, which verify offline against the log key and
// authority chain it wrote to logKey and tsaChain.
func logRelease(release, logKey, tsaChain string) error {
	testlog := exec.Command(filepath.Join(bin, "lexicon-release"), "testlog", "--listen", "127.0.0.1:0",
		"--log-key-out", logKey, "--tsa-chain-out", tsaChain, "-o", "json")
	testlog.Stderr = logFile(filepath.Join(dir, "testlog.log"))
	out, _ := testlog.StdoutPipe()
	if err := testlog.Start(); err != nil {
		return err
	}
	defer stopProc(testlog)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the test log did not start; see %s", filepath.Join(dir, "testlog.log"))
	}
	var ready struct {
		URL    string `json:"url"`
		TSAURL string `json:"tsa_url"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		return err
	}
	logged, err := jsonOf("lexicon-release", "log", "--rekor", ready.URL, "--tsa", ready.TSAURL, release)
	if err != nil {
		return err
	}
	fmt.Printf("logged at index %v of %v in %s\n", logged["log_index"], logged["tree_size"], ready.URL)
	return nil
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
