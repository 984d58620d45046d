package wasm

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
)

// A worker stages a load's cache entry while the module arrives: the compile that follows uses it (a
// verified hit), a compile of another module drops it, and one dropped leaves nothing behind.
func TestStagedCacheSession(t *testing.T) {
	module, digest := builtWord(t, "ref")
	other, otherDigest := builtWord(t, "probe")
	key, err := randomKey()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := openCompileCache(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := &engine{cache: cache}
	compile := func(name, d string, b []byte) CacheStats {
		t.Helper()
		c, err := e.compile(ctx, d, b, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		c.close()
		return c.stats
	}
	compile("ref", digest, module) // fills the cache

	e.stage(digest)
	if s := compile("ref", digest, module); s.Hits != 1 {
		t.Fatalf("staged compile: %+v, want a verified hit", s)
	}
	if e.staged != nil {
		t.Fatal("the compile left its staged session behind")
	}

	e.stage(digest)
	if s := compile("probe", otherDigest, other); s.Misses != 1 {
		t.Fatalf("compile of another module: %+v", s)
	}
	e.stage(digest)
	e.unstage()
	left, _ := os.ReadDir(cache.dir)
	for _, f := range left {
		if strings.HasPrefix(f.Name(), ".compile-") {
			t.Fatalf("a dropped session left %s", filepath.Join(cache.dir, f.Name()))
		}
	}
	if s := compile("ref", digest, module); s.Hits != 1 {
		t.Fatalf("after a dropped stage: %+v", s)
	}
}

// builtWord is a test module `make wasm` built, and its digest.
func builtWord(t *testing.T, name string) ([]byte, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "build", "wasm", "testdata", name+".wasm"))
	if err != nil {
		t.Fatalf("run `make wasm` first: %v", err)
	}
	return b, cas.Sum(b)
}

// A worker's load compiles on the cores it had before keeping to one, and gives them back: a word's
// runs in the worker then share one P again. A warm never takes more.
func TestLoadCompilesOnEveryCoreThenKeepsToOne(t *testing.T) {
	module, digest := builtWord(t, "ref")
	defer func(procs, kept int) { compileProcs = procs; runtime.GOMAXPROCS(kept) }(compileProcs, runtime.GOMAXPROCS(1))
	compileProcs = 2
	e := &engine{stopInCode: false}
	for _, warm := range []bool{false, true} {
		c, err := compileLoad(context.Background(), e, &frame{Kind: kindLoad, Warm: warm, Digest: digest, Memory: 64 << 20, blob: module})
		if err != nil {
			t.Fatal(err)
		}
		c.close()
		if got := runtime.GOMAXPROCS(0); got != 1 {
			t.Fatalf("after a load (warm %v) the worker runs with GOMAXPROCS %d, want 1", warm, got)
		}
	}
}
