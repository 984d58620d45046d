package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestNewWritesEachKind checks what new writes; examples/authors builds and tests each scaffold in a
// module outside the repository.
func TestNewWritesEachKind(t *testing.T) {
	want := map[string][]string{
		"word":   {"build_test.go", "main.go", "manifest.json", "word_test.go"},
		"recipe": {"build_test.go", "main.go", "manifest.json", "recipe_test.go"},
		"driver": {"main.go", "main_test.go", "manifest.json"},
	}
	for kind, files := range want {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "x")
			code, res := runJSON(t, "new", kind, "greet_"+kind, "--dir", dir)
			if code != 0 {
				t.Fatalf("exit %d: %v", code, res)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				if strings.Contains(string(b), "{{") {
					t.Errorf("%s keeps template text", e.Name())
				}
			}
			if !slices.Equal(got, files) {
				t.Fatalf("wrote %v, want %v", got, files)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
			m, err := manifest.Parse(b)
			if err != nil {
				t.Fatalf("manifest.json: %v", err)
			}
			if m.Name != "greet_"+kind || string(m.Kind) != kind {
				t.Fatalf("manifest names %s %s", m.Kind, m.Name)
			}
			if kind != "driver" && !strings.Contains(string(m.Params), `"additionalProperties":false`) &&
				!strings.Contains(string(m.Params), `"additionalProperties": false`) {
				t.Fatalf("params schema is not closed: %s", m.Params)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	full := t.TempDir()
	must(t, os.WriteFile(filepath.Join(full, "main.go"), []byte("package main // the author's\n"), 0o644))
	for _, tc := range []struct {
		args   []string
		status int
		code   string
	}{
		{[]string{"new", "plugin", "x"}, 2, errcode.UsageInvalid},
		{[]string{"new", "word", "Greet"}, 2, errcode.UsageInvalid},
		{[]string{"new", "word", "../x"}, 2, errcode.UsageInvalid},
		{[]string{"new", "word"}, 2, errcode.UsageInvalid},
		{[]string{"new", "word", "greet", "--dir", full}, 2, errcode.UsageInvalid},
	} {
		if code, res := runJSON(t, tc.args...); code != tc.status || res["code"] != tc.code {
			t.Errorf("%v: exit %d: %v, want %d %s", tc.args, code, res, tc.status, tc.code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(full, "main.go")); string(b) != "package main // the author's\n" {
		t.Fatalf("new overwrote an author's file: %q", b)
	}
}
