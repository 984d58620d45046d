package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// An instance's network: a namespace named nsName(id) and a veth pair, vethName(id) on the host and
// eth0 inside. Both ends are point-to-point: the host end holds the gateway address with the
// instance's as its peer, the inside end the instance's address with the gateway as peer and default
// route. No bridge and no forwarding: each instance reaches the host (the plane) and nothing else, and
// all that an instance owns on the host goes when its namespace and veth go.

func nsName(id string) string   { return "lexicon-" + id }
func vethName(id string) string { return "lxn" + strings.TrimPrefix(id, "ns-") } // 11 bytes: under IFNAMSIZ
func peerName(id string) string { return "lxp" + strings.TrimPrefix(id, "ns-") }

// tools are the programs the driver runs, found in fixed system folders (never through PATH: a
// driver's environment is the host's choice).
type tools struct{ ip, unshare string }

var toolDirs = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

func findTools(dirs []string) (tools, error) {
	find := func(name, pkg string) (string, error) {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s (%s) is not installed in %s", name, pkg, strings.Join(dirs, ", "))
	}
	var t tools
	var err error
	if t.ip, err = find("ip", "iproute2"); err != nil {
		return t, err
	}
	t.unshare, err = find("unshare", "util-linux")
	return t, err
}

// run runs a command and returns its error with what it printed.
func run(ctx context.Context, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + basePath, "LC_ALL=C"}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

func (t tools) netnsExists(id string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", nsName(id)))
	return err == nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// makeNet creates the namespace and veth pair of rec and gives them their addresses. On failure it
// removes what it made.
func (t tools) makeNet(ctx context.Context, rec *record, gw netip.Addr) (err error) {
	ns, veth, peer := nsName(rec.ID), vethName(rec.ID), peerName(rec.ID)
	defer func() {
		if err != nil {
			t.removeNet(context.WithoutCancel(ctx), rec.ID)
		}
	}()
	steps := [][]string{
		{t.ip, "netns", "add", ns},
		{t.ip, "link", "add", veth, "type", "veth", "peer", "name", peer},
		{t.ip, "link", "set", peer, "netns", ns},
		{t.ip, "-n", ns, "link", "set", peer, "name", "eth0"},
		{t.ip, "-n", ns, "link", "set", "lo", "up"},
		{t.ip, "-n", ns, "link", "set", "eth0", "up"},
		{t.ip, "link", "set", veth, "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s...); err != nil {
			return err
		}
	}
	return t.addAddr(ctx, rec, gw)
}

// flushAddr takes every IPv4 address off both ends of rec's veth pair.
func (t tools) flushAddr(ctx context.Context, id string) error {
	if _, err := run(ctx, t.ip, "-4", "addr", "flush", "dev", vethName(id)); err != nil {
		return err
	}
	_, err := run(ctx, t.ip, "-n", nsName(id), "-4", "addr", "flush", "dev", "eth0")
	return err
}

// addAddr gives both ends of rec's veth pair their addresses and the instance its default route.
func (t tools) addAddr(ctx context.Context, rec *record, gw netip.Addr) error {
	ns := nsName(rec.ID)
	steps := [][]string{
		{t.ip, "addr", "add", gw.String(), "peer", rec.IPv4.String(), "dev", vethName(rec.ID)},
		{t.ip, "-n", ns, "addr", "add", rec.IPv4.String(), "peer", gw.String(), "dev", "eth0"},
		{t.ip, "-n", ns, "route", "replace", "default", "via", gw.String(), "dev", "eth0"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s...); err != nil {
			return err
		}
	}
	return nil
}

// pids lists the processes in id's namespace.
func (t tools) pids(ctx context.Context, id string) ([]int, error) {
	out, err := run(ctx, t.ip, "netns", "pids", nsName(id))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if n, err := strconv.Atoi(f); err == nil && n > 1 {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

// killAll kills every process in id's namespace (SIGKILL: the power is cut), until none is left.
func (t tools) killAll(ctx context.Context, id string) error {
	if !t.netnsExists(id) {
		return nil
	}
	for round := 0; round < 20; round++ {
		pids, err := t.pids(ctx, id)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		for _, p := range pids {
			waitGone(p, 5*time.Second)
		}
	}
	return fmt.Errorf("processes keep appearing in namespace %s", nsName(id))
}

// removeNet kills what runs in id's namespace and deletes it and the veth pair; nothing that is
// already gone is an error.
func (t tools) removeNet(ctx context.Context, id string) error {
	var errs []error
	if err := t.killAll(ctx, id); err != nil {
		errs = append(errs, err)
	} else if err := removeCgroup(id); err != nil {
		errs = append(errs, err)
	}
	if t.netnsExists(id) {
		if _, err := run(ctx, t.ip, "netns", "del", nsName(id)); err != nil {
			errs = append(errs, err)
		}
	}
	// Deleting the namespace deletes eth0 and with it the pair; a pair half made (peer never moved)
	// is deleted here.
	if linkExists(vethName(id)) {
		if _, err := run(ctx, t.ip, "link", "del", vethName(id)); err != nil && linkExists(vethName(id)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// counters are the bytes through the host end of id's veth pair: received by the host (sent by the
// instance) and sent by the host (received by the instance).
func counters(id string) (rx, tx int64, err error) {
	read := func(name string) (int64, error) {
		raw, err := os.ReadFile(filepath.Join("/sys/class/net", vethName(id), "statistics", name))
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	}
	if rx, err = read("rx_bytes"); err != nil {
		return 0, 0, err
	}
	tx, err = read("tx_bytes")
	return rx, tx, err
}

// inInstance is a command that runs the helper inside instance dir's namespaces: its network
// namespace (ip netns exec) and fresh private mount and UTS namespaces (unshare), where the helper
// binds the instance's folders before running mode. It starts in its own session so that it outlives
// the driver.
func (t tools) inInstance(root string, rec *record, mode string, args ...string) *exec.Cmd {
	argv := append([]string{"netns", "exec", nsName(rec.ID), t.unshare, "--mount", "--uts", "--propagation", "private", helperPath(root)}, args...)
	cmd := exec.Command(t.ip, argv...)
	cmd.Env = []string{
		"PATH=" + basePath, "LANG=C.UTF-8",
		envHelper + "=" + mode, envInstance + "=" + filepath.Join(root, "instances", rec.ID),
		envEnter + "=1", envHostname + "=" + rec.Label,
	}
	if _, kind := cgroupMount(); kind != "" {
		cmd.Env = append(cmd.Env, envCgroup+"="+kind)
	}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}
