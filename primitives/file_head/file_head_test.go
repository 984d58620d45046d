package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/file_head.wasm"

type head struct {
	Lines     []string
	Truncated bool
	Redacted  int
	Binary    bool
}

func TestHeadRedactsCredentials(t *testing.T) {
	etc := t.TempDir()
	conf := "# app\nlisten = 8080\ndb_password = hunter2\nupstream = http://api:tok3n@10.0.0.2/\nworkers 4\nline6\n"
	if err := os.WriteFile(filepath.Join(etc, "app.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(etc, "blob"), []byte{0x7f, 'E', 'L', 'F', 0, 0}, 0o644)
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.Paths("fs.read", etc))
	var h head
	res := w.Must(map[string]any{"path": filepath.Join(etc, "app.conf"), "lines": 5}, &h)
	want := []string{"# app", "listen = 8080", "db_password = [REDACTED]", "upstream = http://api:[REDACTED]@10.0.0.2/", "workers 4"}
	if strings.Join(h.Lines, "\n") != strings.Join(want, "\n") || !h.Truncated || h.Redacted != 2 {
		t.Fatalf("%+v", h)
	}
	if strings.Contains(string(res.Output), "hunter2") || strings.Contains(string(res.Output), "tok3n") {
		t.Fatal("a secret left the word")
	}
	w.Must(map[string]any{"path": filepath.Join(etc, "blob")}, &h)
	if !h.Binary || len(h.Lines) != 0 {
		t.Fatalf("binary file: %+v", h)
	}
	if res := w.Run(map[string]any{"path": "/etc/shadow"}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("/etc/shadow: %s", res.Code)
	}
}
