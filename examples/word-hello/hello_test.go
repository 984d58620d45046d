package main_test

import (
	"os"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// The word as `make wasm` builds it. An author outside this repository points at their own build.
const wasmFile = "../../build/wasm/examples/hello.wasm"

func TestHello(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json")
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
	w := wordtest.Load(t, wasmFile, "manifest.json")
	if res := w.Run(map[string]any{"name": "x", "admin": true}); res.Code != "word.param_invalid" {
		t.Fatalf("extra param: %s", res.Code)
	}
	if res := w.Run(map[string]any{"name": "  "}); res.Code != "hello.no_name" {
		t.Fatalf("empty name: %s %s", res.Code, res.Message)
	}
}
