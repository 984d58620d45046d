// Package backuptest gives backup tests their real parts: an S3-compatible server (versitygw with its
// POSIX backend on loopback, one process per Start, serving a fresh folder), fresh PostgreSQL
// databases on the server the tests use, and folders a restore may write into. versitygw is
// build/tools/versitygw, built by `make versitygw` from the Go module proxy (tools/versitygw pins the
// version); a test run without it builds it once, under a lock, the same way.
//
//	srv := backuptest.Start(t)
//	target := srv.Target(srv.Bucket(t, "backups"), "fleet")
//	signer, _ := presign.New(target)
package backuptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// Region is the region every server here signs for.
const Region = "us-east-1"

// Server is one running versitygw.
type Server struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint  string
	AccessKey string
	SecretKey string
	// Dir is the folder its POSIX backend serves: a bucket is a folder, an object a file.
	Dir string
}

// Option changes how a server starts.
type Option func(*options)

type options struct {
	dir      string
	readOnly bool
}

// ReadOnly starts a gateway that refuses every write (versitygw --readonly): a target that lets a
// node read but not add.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// Over serves dir, another server's folder, instead of a fresh one.
func Over(dir string) Option { return func(o *options) { o.dir = dir } }

// Start starts a server for the test and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	bin := Binary(t)
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	s := &Server{AccessKey: "lexicon-test", SecretKey: randomHex(20), Dir: o.dir}
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		args := []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--region", Region, "--port", addr, "--quiet"}
		if o.readOnly {
			args = append(args, "--readonly")
		}
		args = append(args, "posix", s.Dir)
		cmd := exec.Command(bin, args...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start versitygw: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if up(addr, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			s.Endpoint = "http://" + addr
			return s
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 3 {
			t.Fatalf("versitygw did not start on %s: %s", addr, logs.String())
		}
	}
}

// up waits until addr accepts connections, or the process exits (another took the port first).
func up(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Target is a target of this server's bucket, with its credentials.
func (s *Server) Target(bucket, prefix string) presign.Target {
	return presign.Target{Name: "test", Endpoint: s.Endpoint, Region: Region, Bucket: bucket, Prefix: prefix,
		AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
}

// Client is an S3 client holding the server's credentials.
func (s *Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	c, err := presign.Client(s.Target("unused", ""))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket makes a bucket and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	if _, err := s.Client(t).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Keys lists the keys under prefix, in key order.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(t), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// Object reads an object.
func (s *Server) Object(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := s.Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Corrupt changes one byte in the middle of an object, behind every node's and plane's back: the
// bucket's own file is rewritten in place.
func (s *Server) Corrupt(t testing.TB, bucket, key string) {
	t.Helper()
	p := filepath.Join(s.Dir, bucket, filepath.FromSlash(key))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("corrupt %s: %v", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		t.Fatalf("corrupt %s: empty or unreadable (%v)", key, err)
	}
	b := make([]byte, 1)
	off := fi.Size() / 2
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// Manifests reads the manifest of every run of node that has one, by run.
func (s *Server) Manifests(t testing.TB, target presign.Target, node string) map[string]*backup.Manifest {
	t.Helper()
	out := map[string]*backup.Manifest{}
	prefix := backup.NodePrefix(target.Prefix, node)
	for _, k := range s.Keys(t, target.Bucket, prefix) {
		run, manifest, ok := backup.RunOfKey(prefix, k)
		if !ok || !manifest {
			continue
		}
		m, err := backup.ParseManifest(s.Object(t, target.Bucket, k))
		if err != nil {
			t.Fatalf("manifest %s: %v", k, err)
		}
		out[run] = m
	}
	return out
}

// ReadGrant grants reading the chain of run (the newest run with a manifest when run is ""), as the
// plane will: from the manifests it lists and reads with its own credentials.
func (s *Server) ReadGrant(t testing.TB, target presign.Target, node, run string) *Chain {
	t.Helper()
	have := s.Manifests(t, target, node)
	if run == "" {
		for r := range have {
			run = max(run, r)
		}
	}
	chain, err := backup.ChainOf(have, run)
	if err != nil {
		t.Fatalf("chain of %s: %v", run, err)
	}
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	g, err := signer.ReadGrant(context.Background(), node, chain, time.Hour)
	if err != nil {
		t.Fatalf("read grant: %v", err)
	}
	return &Chain{Grant: g, Manifests: chain}
}

// Chain is a read grant and the manifests of the chain it reads, the full run first.
type Chain struct {
	Grant     *channel.BackupGrant
	Manifests []*backup.Manifest
}

// Binary returns the path of versitygw, building it first if this checkout has none.
func Binary(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "build", "tools", "versitygw")
	buildOnce.Do(func() { buildErr = build(root, bin) })
	if buildErr != nil {
		t.Fatalf("versitygw: %v (make versitygw builds it)", buildErr)
	}
	return bin
}

var (
	buildOnce sync.Once
	buildErr  error
)

// build builds versitygw into bin unless it is there, under a lock shared by every test binary.
func build(root, bin string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return nil
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/versity/versitygw/cmd/versitygw")
	cmd.Dir = filepath.Join(root, "tools", "versitygw")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build in tools/versitygw: %v\n%s", err, out)
	}
	return nil
}

// moduleRoot is the folder of the project's go.mod, above the working folder.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/lexicon-fleet/lexicon\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the lexicon module")
		}
		dir = parent
	}
}
