package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestDemo runs make demo's scenario once, as DEMO_ONESHOT does, on the binaries and modules the
// Makefile built: a signed release, a plane on SQLite, an agent that joins and is approved by its
// fingerprint, and host_report and disk_usage run on this machine; as root with network namespaces,
// one more machine provisioned through the netns cloud runs host_report, and is decommissioned.
func TestDemo(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin, modules = filepath.Join(root, "build", "bin"), filepath.Join(root, "build", "modules")
	if _, err := os.Stat(filepath.Join(modules, "word-host_report", "manifest.json")); err != nil {
		t.Fatalf("build the modules first (make modules): %v", err)
	}
	dir = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen = ln.Addr().String()
	ln.Close()
	// A range of its own: a make demo running beside the test keeps the default one.
	netnsRange, netnsGateway = "10.213.201.0/24", "10.213.201.1"
	t.Setenv("DEMO_ONESHOT", "1")
	if err := demo(); err != nil {
		t.Fatal(err)
	}
}
