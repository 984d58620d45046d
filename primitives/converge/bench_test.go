package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// BenchmarkConvergeUnchanged is the converge of an unchanged 200-item footprint on a node, in a worker
// process as the agent runs it: 160 files, 20 units, 10 groups, 5 users, 4 sysctl values and the
// firewall (absent here and in the footprint), every one as declared, so nothing is fetched and
// nothing changed. The goal is at most a second. The users, groups and sysctl values are this
// machine's own, read as they are: nothing is changed.
func BenchmarkConvergeUnchanged(b *testing.B) {
	root := wordtest.WritableDir(b)
	plane := artifactsFor(b)
	fp := &footprint.Footprint{Schema: footprint.SchemaName, Firewall: &footprint.Firewall{State: "absent"}}
	units := map[string]string{}
	for i := range 160 {
		content := fmt.Sprintf("# file %d\n%s", i, strings.Repeat("setting = value\n", 64))
		fp.Files = append(fp.Files, footprint.File{Path: filepath.Join(root, fmt.Sprintf("etc/app%02d/file%d.conf", i%16, i)),
			SHA256: plane.Put([]byte(content)), Size: int64(len(content)), Mode: "0644", Owner: "root", Group: "root"})
	}
	for i := range 20 {
		name := fmt.Sprintf("app%02d.service", i)
		units[name] = "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n"
		fp.Units = append(fp.Units, footprint.Unit{Name: name, Enabled: true, Started: true, Files: []string{fp.Files[i].Path}})
	}
	for _, g := range []string{"root", "daemon", "bin", "sys", "adm", "tty", "disk", "lp", "mail", "news"} {
		fp.Groups = append(fp.Groups, footprint.Group{Name: g, State: "present"})
	}
	for _, u := range []string{"root", "daemon", "bin", "sys", "sync"} {
		fp.Users = append(fp.Users, footprint.User{Name: u, State: "present"})
	}
	for _, k := range []string{"net.ipv4.ip_forward", "net.ipv4.tcp_syncookies", "vm.swappiness", "kernel.pid_max"} {
		v, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
		if err != nil {
			b.Skipf("no /proc/sys here: %v", err)
		}
		fp.Sysctl = append(fp.Sysctl, footprint.Sysctl{Key: k, Value: strings.TrimSpace(string(v))})
	}
	if n := len(footprint.Items(fp)); n != 200 {
		b.Fatalf("%d items", n)
	}
	sd := wordtest.NewFakeSystemd(units)
	bounds := footprint.Bounds{Paths: []string{root}, Units: []string{"app*.service"}, Users: []string{"*"}, Groups: []string{"*"},
		Sysctl: []string{"*"}, Firewall: true}
	w := wordtest.Load(b, module, "manifest.json", wordtest.WithIsolation(wasm.Process), wordtest.WithSystemd(sd),
		wordtest.WithArtifacts(plane), wordtest.WithConverge(bounds),
		wordtest.Paths("fs.digest", root), wordtest.Paths("fs.diff", root), wordtest.Paths("fs.install", root))
	params := apply(fp)
	first := w.Run(params)
	if first.Outcome != wasm.Completed {
		b.Fatalf("first converge: %s %s", first.Code, first.Message)
	}
	served := len(plane.Served())
	b.ResetTimer()
	for b.Loop() {
		res := w.Run(params)
		if res.Outcome != wasm.Completed || !strings.Contains(string(res.Output), `"unchanged":200`) {
			b.Fatalf("%s %s %.300s", res.Code, res.Message, res.Output)
		}
	}
	b.StopTimer()
	if len(plane.Served()) != served {
		b.Fatal("an unchanged converge fetched artifacts")
	}
}
