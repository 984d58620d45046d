package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// wasmEnv names a prebuilt module to test instead (`make wasm` builds build/wasm/examples/hello.wasm).
// Unset, the test builds the word from this folder's source, as the README does, so it tests what the
// author wrote and not whatever was built last.
const wasmEnv = "LEXICON_HELLO_WASM"

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// wasmFile is the module under test: the file wasmEnv names, or the word built from source.
func wasmFile(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(wasmEnv); p != "" {
		return p
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "word-hello-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "hello.wasm")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", built.path, ".")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go build: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestHello(t *testing.T) {
	w := wordtest.Load(t, wasmFile(t), "manifest.json")
	var out struct{ Greeting, Host string }
	res := w.Must(map[string]any{"name": "node", "shout": true}, &out)
	host, _ := os.Hostname()
	if out.Greeting != "HELLO, NODE!" || out.Host != host {
		t.Fatalf("%+v", out)
	}
	if res.Transcript != "greeted 4 characters\n" {
		t.Fatalf("transcript %q", res.Transcript)
	}
	if len(res.Capabilities) != 1 || res.Capabilities[0].Cap != "sys.facts" || !res.Capabilities[0].Allowed {
		t.Fatalf("capabilities %+v", res.Capabilities)
	}
}

func TestHelloRefusesBadParams(t *testing.T) {
	w := wordtest.Load(t, wasmFile(t), "manifest.json")
	if res := w.Run(map[string]any{"name": "x", "admin": true}); res.Code != "word.param_invalid" {
		t.Fatalf("extra param: %s", res.Code)
	}
	if res := w.Run(map[string]any{"name": "  "}); res.Code != "hello.no_name" {
		t.Fatalf("empty name: %s %s", res.Code, res.Message)
	}
}
