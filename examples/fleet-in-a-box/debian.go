package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

var (
	// debianRoot is the netns cloud's debian-12 image (make debian-root builds it).
	debianRoot = envOr("DEMO_DEBIAN_ROOT", "build/debian-12/root")
	// aptFixture builds the test apt repository of host/wasm/pkgmgr/apttest and names it (make demo
	// builds it into build/tools).
	aptFixture = envOr("DEMO_APT_FIXTURE", "build/tools/lexfix-repo")
)

// debianUnavailable says why the Debian machine cannot be made here ("" when it can), given that the
// netns cloud can.
func debianUnavailable() string {
	if _, err := os.Stat(filepath.Join(debianRoot, "usr/bin/apt-get")); err != nil {
		return fmt.Sprintf("no Debian 12 root at %s (make debian-root builds it)", debianRoot)
	}
	if _, err := os.Stat(aptFixture); err != nil {
		return fmt.Sprintf("no %s, which builds the test apt repository (make demo builds it)", aptFixture)
	}
	return ""
}

// releaseModules is the folder the demo's release is built from: the staged modules, each file
// linked, but restart_services' allow-list gains the Debian machine's daemon (lexfix-*.service), as a
// site's own release adds its units; without it the patch would leave the daemon on the replaced
// library.
func releaseModules(staged, out string) error {
	staged, err := filepath.Abs(staged)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(staged)
	if err != nil {
		return fmt.Errorf("build the modules first (make modules): %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(staged, e.Name()))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(out, e.Name()), 0o755); err != nil {
			return err
		}
		for _, f := range files {
			src, dst := filepath.Join(staged, e.Name(), f.Name()), filepath.Join(out, e.Name(), f.Name())
			if e.Name() == "word-restart_services" && f.Name() == "manifest.json" {
				if err := allowUnit(src, dst, "lexfix-*.service"); err != nil {
					return err
				}
				continue
			}
			if err := os.Symlink(src, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// allowUnit writes the manifest at src to dst with unit added to its systemd capabilities' units.
func allowUnit(src, dst, unit string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	added := 0
	for _, c := range m["capabilities"].([]any) {
		c := c.(map[string]any)
		if units, ok := c["units"].([]any); ok && (c["cap"] == "systemd.unit" || c["cap"] == "systemd.restart") {
			c["units"] = append(units, unit)
			added++
		}
	}
	if added != 2 {
		return fmt.Errorf("%s: restart_services' manifest has no systemd.unit and systemd.restart units to add %s to", src, unit)
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}

// debianNode makes a debian-12 machine through the netns cloud whose user data, as its admin's
// would, points apt at the test repository (served here, on the range's gateway), installs the
// fixture's library 1.0 (its 1.1 is a security fix) and the daemon linking it, and runs the install
// command. The library is made critical; packages_report shows the node red; fleet patch installs
// the fix, restarts the daemon and verifies; the row turns green. undo deletes the instance and
// disconnects the node.
func debianNode(ctx context.Context, admin func(...string) (map[string]any, error), planeURL string) (undo func(), err error) {
	const name = "demo-deb-1"
	start := time.Now()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return nil, err
	}
	aptURL := "http://" + net.JoinHostPort(netnsGateway, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)) + "/debian"
	var fx struct {
		Repo        string `json:"repo"`
		Keyring     []byte `json:"keyring"`
		KeyringPath string `json:"keyring_path"`
		SourcesList string `json:"sources_list"`
		Lib         string `json:"lib"`
		Daemon      string `json:"daemon"`
	}
	cmd := exec.Command(aptFixture, aptURL)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil || json.Unmarshal(out, &fx) != nil {
		ln.Close()
		return nil, fmt.Errorf("%s: %v %s", aptFixture, err, out)
	}
	srv := &http.Server{Handler: http.StripPrefix("/debian", http.FileServer(http.Dir(fx.Repo)))}
	go func() { _ = srv.Serve(ln) }()
	undo = func() { srv.Close() }

	ic, err := admin("nodes", "install-command", "--labels", "demo=debian", "--expires", "30m")
	if err != nil {
		return undo, err
	}
	cmdline, _ := ic["command"].(string)
	b64 := strings.TrimSuffix(strings.TrimPrefix(cmdline, "echo "), " | base64 -d | sh")
	script, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return undo, fmt.Errorf("the install command %q: %w", cmdline, err)
	}
	prelude := fmt.Sprintf("LEXICON_NAME=%s\nmkdir -p %s\necho %s | base64 -d >%s\necho %s | base64 -d >/etc/apt/sources.list.d/lexfix.list\napt-get update -q\napt-get install -y -q --no-install-recommends %s=1.0 %s=1.0\n",
		name, filepath.Dir(fx.KeyringPath), base64.StdEncoding.EncodeToString(fx.Keyring), fx.KeyringPath,
		base64.StdEncoding.EncodeToString([]byte(fx.SourcesList)), fx.Lib, fx.Daemon)
	text := strings.Replace(string(script), "set -eu\n", "set -eu\n"+prelude, 1)
	if text == string(script) {
		return undo, errors.New("the install command's script does not start with set -eu")
	}
	userData := filepath.Join(dir, name+".user-data")
	if err := os.WriteFile(userData, []byte(text), 0o600); err != nil {
		return undo, err
	}
	inst, err := admin("cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "debian-12",
		"--label", name, "--user-data-file", userData)
	if err != nil {
		return undo, err
	}
	instID, _ := inst["id"].(string)
	stopRepo := undo
	undo = func() {
		if _, err := admin("cloud", "delete", "--account", "local", instID, "--confirm", name); err != nil {
			fmt.Fprintf(os.Stderr, "demo: delete %s's instance %s: %v\n", name, instID, err)
		}
		_, _ = admin("nodes", "disconnect", name)
		stopRepo()
		fmt.Fprintf(stdout, "%s deleted (instance %s) and its node disconnected\n", name, instID)
	}
	fmt.Fprintf(stdout, "instance %s (debian-12): its user data points apt at the test repository on %s, installs %s 1.0 and %s, and runs the install command\n",
		instID, aptURL, fx.Lib, fx.Daemon)
	var nodeID string
	if err := poll(ctx, 3*time.Minute, name+" did not join; see "+filepath.Join(dir, "plane.log"), func() (bool, error) {
		list, err := admin("nodes", "list")
		if err != nil {
			return false, err
		}
		for _, n := range list["nodes"].([]any) {
			if n := n.(map[string]any); n["name"] == name {
				nodeID, _ = n["id"].(string)
			}
		}
		return nodeID != "", nil
	}); err != nil {
		return undo, err
	}
	if err := waitVocabulary(ctx, admin, nodeID); err != nil {
		return undo, err
	}
	fmt.Fprintf(stdout, "node %s joined, approved by its install command, %s after create\n", name, time.Since(start).Round(time.Millisecond))

	// The critical list in force, and the fixture's library.
	crit, err := admin("fleet", "critical", "show")
	if err != nil {
		return undo, err
	}
	list := []string{"set"}
	for _, c := range crit["critical"].([]any) {
		list = append(list, fmt.Sprint(c))
	}
	if _, err := admin(append(append([]string{"fleet", "critical"}, list...), fx.Lib)...); err != nil {
		return undo, err
	}
	fmt.Fprintf(stdout, "critical packages now: %s %s\n", strings.Join(list[1:], " "), fx.Lib)

	if res, err := admin("jobs", "run", nodeID, "packages_report", "--wait"); err != nil {
		return undo, err
	} else if res["state"] != "completed" {
		return undo, fmt.Errorf("packages_report on %s ended %v: %v %v", name, res["state"], res["outcome_code"], res["outcome_message"])
	}
	if _, err := fleetSecurity(admin, planeURL, nodeID); err != nil {
		return undo, err
	}
	patchStart := time.Now()
	p, err := admin("fleet", "patch", "--selector", name, "--wait")
	if err != nil {
		return undo, err
	}
	fmt.Fprintf(stdout, "fleet patch %v on %s: %v in %s (install_security_updates, restart_services, packages_report)\n", p["id"], name, p["state"], time.Since(patchStart).Round(time.Millisecond))
	if _, err := fleetSecurity(admin, planeURL, nodeID); err != nil {
		return undo, err
	}
	fmt.Fprintf(stdout, "the Debian machine, red to green, took %s\n", time.Since(start).Round(time.Millisecond))
	return undo, nil
}

// poll asks done until it says yes, for timeout at most.
func poll(ctx context.Context, timeout time.Duration, why string, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New(why)
}
