package backupe2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
)

// benchTree writes the benchmark's tree: 1 GiB in 2,000 text files of 4 to 64 KiB (which compress),
// 200 files of 1 MiB and files of 64 MiB (which do not), in 20 folders. The same seed makes the same
// tree every time.
func benchTree(b *testing.B, dir string) int64 {
	b.Helper()
	rng := rand.New(rand.NewChaCha8([32]byte{'l', 'e', 'x', 'i', 'c', 'o', 'n'}))
	words := strings.Fields("the node backs up its folders and databases to the bucket every night encrypted to the fleet's recovery key")
	var total int64
	put := func(p string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(len(data))
	}
	randomBytes := func(n int) []byte {
		buf := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			v := rng.Uint64()
			for k := range 8 {
				buf[i+k] = byte(v >> (8 * k))
			}
		}
		return buf
	}
	for d := range 20 {
		for f := range 100 {
			n := 4<<10 + rng.IntN(60<<10)
			var sb strings.Builder
			for sb.Len() < n {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteByte(' ')
			}
			put(filepath.Join(dir, fmt.Sprintf("d%02d", d), fmt.Sprintf("f%03d.txt", f)), []byte(sb.String()[:n]))
		}
	}
	for i := range 200 {
		put(filepath.Join(dir, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("m%03d.bin", i)), randomBytes(1<<20))
	}
	for i := 0; total < 1<<30; i++ {
		put(filepath.Join(dir, fmt.Sprintf("big%02d.bin", i)), randomBytes(int(min(64<<20, 1<<30-total))))
	}
	return total
}

// measured is one timed process.
type measured struct {
	wall, cpu time.Duration
}

func timed(b *testing.B, cmd *exec.Cmd) measured {
	b.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return measured{wall: wall, cpu: cpu}
}

// BenchmarkBackup1GiB backs up the same 1 GiB tree to the same versitygw, in the same run, with the
// real agent running the signed backup word (full runs: a fresh run each round, nothing to build on)
// and with Debian's restic (a fresh repository each round), rounds interleaved, and prints each one's
// throughput (median and range over the rounds, wall time of the whole process, from its start to its
// exit) and CPU. A run with nothing changed follows, for both, once.
func BenchmarkBackup1GiB(b *testing.B) {
	restic, err := exec.LookPath("restic")
	if err != nil {
		b.Fatalf("restic is needed beside the node's figure (apt-get install restic): %v", err)
	}
	rounds := 5
	if s := os.Getenv("BACKUP_BENCH_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	bin := binaries(b)
	srv := backuptest.Start(b)
	target := srv.Target(srv.Bucket(b, "bench"), "fleet")
	srv.Bucket(b, "restic")
	signer, err := presign.New(target)
	if err != nil {
		b.Fatal(err)
	}
	data := filepath.Join(b.TempDir(), "tree")
	size := benchTree(b, data)
	release, trust := signedRelease(b)
	config, state, cache := filepath.Join(b.TempDir(), "config"), filepath.Join(b.TempDir(), "state"), filepath.Join(b.TempDir(), "cache")
	if err := os.MkdirAll(state, 0o700); err != nil {
		b.Fatal(err)
	}
	pol, _ := json.Marshal(map[string]any{"classes": map[string]string{"change": "accept"}, "backup": backup.Policy{Paths: []string{data}}})
	writeFile(b, filepath.Join(config, "policy.json"), pol, 0o644)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	recovery := id.Recipient().String()
	grant := func(parent string) string {
		g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "bench", Parent: parent, Recipients: []string{recovery}, Objects: 400})
		if err != nil {
			b.Fatal(err)
		}
		return grantFile(b, g)
	}
	agentRun := func(grantFile, mode string) *exec.Cmd {
		return exec.Command(filepath.Join(bin, "lexicon-agent"), "word", "run", "--release", release, "--trust", trust, "--word", "backup",
			"--params", fmt.Sprintf(`{"paths": [%q], "mode": %q}`, data, mode), "--grant", grantFile,
			"--config-dir", config, "--state-dir", state, "--cache-dir", cache, "-o", "json")
	}
	resticEnv := append(os.Environ(), "AWS_ACCESS_KEY_ID="+target.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+target.SecretAccessKey,
		"RESTIC_PASSWORD=bench", "RESTIC_CACHE_DIR="+filepath.Join(b.TempDir(), "restic-cache"))
	resticCmd := func(repo string, args ...string) *exec.Cmd {
		cmd := exec.Command(restic, append([]string{"--no-cache", "-q", "-r", "s3:" + srv.Endpoint + "/restic/" + repo}, args...)...)
		cmd.Env = resticEnv
		return cmd
	}
	// The word is compiled into the cache once, as an agent does when it accepts a release.
	timed(b, agentRun(grant(""), "full"))
	os.RemoveAll(filepath.Join(srv.Dir, "bench", "fleet"))

	b.ResetTimer()
	var node, res []measured
	for i := range rounds {
		g := grant("")
		node = append(node, timed(b, agentRun(g, "full")))
		os.RemoveAll(filepath.Join(srv.Dir, "bench", "fleet"))
		repo := fmt.Sprintf("repo%d", i)
		timed(b, resticCmd(repo, "init"))
		res = append(res, timed(b, resticCmd(repo, "backup", data)))
		if i < rounds-1 {
			os.RemoveAll(filepath.Join(srv.Dir, "restic", repo))
		}
	}
	// Nothing changed since: an incremental run of the node on its last run, a restic backup on its
	// last snapshot.
	timed(b, agentRun(grant(""), "full"))
	parent := ""
	for r := range srv.Manifests(b, target, "bench") {
		parent = max(parent, r)
	}
	nodeInc := timed(b, agentRun(grant(parent), "incremental"))
	resticInc := timed(b, resticCmd(fmt.Sprintf("repo%d", rounds-1), "backup", data))
	b.StopTimer()

	mbps := func(m measured) float64 { return float64(size) / 1e6 / m.wall.Seconds() }
	summary := func(ms []measured) (med, lo, hi float64, cpu time.Duration) {
		v := make([]float64, len(ms))
		cpus := make([]time.Duration, len(ms))
		for i, m := range ms {
			v[i], cpus[i] = mbps(m), m.cpu
		}
		slices.Sort(v)
		slices.Sort(cpus)
		return v[len(v)/2], v[0], v[len(v)-1], cpus[len(cpus)/2]
	}
	nm, nlo, nhi, ncpu := summary(node)
	rm, rlo, rhi, rcpu := summary(res)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("backup of a %d MiB tree (%d rounds, interleaved; load average %s)\n", size>>20, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("  node (lexicon-agent word run backup, full): median %.1f MB/s (range %.1f–%.1f), CPU %.1f s a run\n", nm, nlo, nhi, ncpu.Seconds())
	fmt.Printf("  restic backup (fresh repository):           median %.1f MB/s (range %.1f–%.1f), CPU %.1f s a run\n", rm, rlo, rhi, rcpu.Seconds())
	fmt.Printf("  node / restic: %.2f× (median over median)\n", nm/rm)
	fmt.Printf("  nothing changed: node incremental %.2f s, restic %.2f s\n", nodeInc.wall.Seconds(), resticInc.wall.Seconds())
	b.ReportMetric(nm, "node-MB/s")
	b.ReportMetric(rm, "restic-MB/s")
	b.ReportMetric(nm/rm, "node/restic")
}
