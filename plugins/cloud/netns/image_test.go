package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestImageSettings(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	for name, images := range map[string]map[string]string{
		"host redefined": {"host": "/srv/x"},
		"bad name":       {"Debian 12": "/srv/x"},
		"relative":       {"debian-12": "srv/x"},
		"unclean":        {"debian-12": "/srv/../x"},
		"root":           {"debian-12": "/"},
	} {
		err := (&Driver{}).SetConfig(context.Background(), settingsConfig(t, Settings{Root: root, Images: images}))
		if errcode.Code(err) != errcode.DriverConfigInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := parseUserData("#cloud-config\nwrite_files:\n  - path: /etc/apt/sources.list.d/x.list\n    content: deb x\n", true); err != nil {
		t.Errorf("an instance with its own root may write anywhere in it: %v", err)
	}
	if _, err := parseUserData("#cloud-config\nwrite_files:\n  - path: /etc/apt/../shadow\n    content: x\n", true); err == nil {
		t.Error("a path that climbs is accepted")
	}
}

// A debian-12 instance has its own root: what it writes lands in its upper layer, never in the
// image or the host's files; power off and on keeps it; delete removes it and its mount.
func TestDebianImage(t *testing.T) {
	needNamespaces(t)
	debian := apttest.DebianRoot(t)
	d := configured(t, Settings{Root: filepath.Join(t.TempDir(), "state"), Range: "10.213.110.0/24", Images: map[string]string{"debian-12": debian}})
	ctx := context.Background()
	if _, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "ubuntu-24.04", Label: "x"}); errcode.Code(err) != errcode.CloudInvalid ||
		!strings.Contains(err.Error(), "host, debian-12") {
		t.Fatalf("unknown image: %v", err)
	}
	const marker = "/etc/lexicon-image-test"
	ud := "#cloud-config\nwrite_files:\n  - path: " + marker + "\n    content: mine\nruncmd:\n  - [dpkg-query, -W, dpkg]\n"
	in, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "local", Type: "ns-1", Image: "debian-12", Label: "own", UserData: ud})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteInstance(context.Background(), in.ID) })
	waitStatus(t, d, in.ID, cloud.StatusRunning)
	m := machine{t: t, d: d, id: in.ID}
	if out := m.must("cat", marker); out != "mine" {
		t.Fatalf("inside: %q", out)
	}
	for _, p := range []string{marker, filepath.Join(debian, marker)} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was written outside the instance", p)
		}
	}
	if out := m.must("sh", "-c", ". /etc/os-release && echo $ID $VERSION_ID"); strings.TrimSpace(out) != "debian 12" {
		t.Fatalf("os-release inside: %q", out)
	}
	if err := d.PowerOff(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.PowerOn(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if out := m.must("cat", marker); out != "mine" {
		t.Fatalf("after power off and on: %q", out)
	}
	merged := filepath.Join(d.cfg.state.rootfs(in.ID), "merged")
	if !mounted(merged) {
		t.Fatal("the root is not mounted")
	}
	if err := d.DeleteInstance(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.cfg.state.rootfs(in.ID)); err == nil || mounted(merged) {
		t.Fatalf("the root outlives its instance: %v", err)
	}
}
