package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestFilesRefusedInWords: a params file or a records file of the wrong shape is refused (usage,
// nothing sent) saying what was expected in JSON's words and where, never naming a Go type.
func TestFilesRefusedInWords(t *testing.T) {
	f := newFleet(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		args          []string
		says          string
	}{
		{"params of an array", `[1, 2]`, []string{"jobs", "run", f.node.ID, "host_report", "--params-file"},
			"the file must be an object, not an array"},
		{"params of a number", `5`, []string{"jobs", "run", f.node.ID, "host_report", "--params-file"},
			"the file must be an object, not a number"},
		{"params not JSON", "{\n  \"a\": 1,\n}", []string{"jobs", "run", f.node.ID, "host_report", "--params-file"},
			"not valid JSON at line 3, column 1: invalid character '}'"},
		{"params cut short", `{"a": `, []string{"jobs", "run", f.node.ID, "host_report", "--params-file"},
			"not valid JSON: it ends before its value does"},
		{"params empty", ``, []string{"jobs", "run", f.node.ID, "host_report", "--params-file"}, "it holds no JSON value"},
		{"params twice", `{} {}`, []string{"jobs", "run", f.node.ID, "host_report", "--params-file"}, "it holds more than one JSON value"},
		{"records of a number", `{"records": 5}`, []string{"dns", "reconcile", "--account", "a", "--zone", "z", "--records-file"},
			"records must be an array, not a number"},
		{"a record's type of a number", `{"records": [{"type": 5}]}`, []string{"dns", "reconcile", "--account", "a", "--zone", "z", "--records-file"},
			"records.type must be a string, not a number"},
		{"an unknown field", `{"recordz": []}`, []string{"dns", "reconcile", "--account", "a", "--zone", "z", "--records-file"},
			`unknown field "recordz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, _ := f.lexicon(append(tc.args, file, "-o", "json")...)
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %s", out)
			}
			msg, _ := got["message"].(string)
			if code != 2 || got["code"] != errcode.UsageInvalid || !strings.Contains(msg, file+": "+tc.says) ||
				strings.Contains(msg, "Go ") || strings.Contains(msg, "json.") || strings.Contains(msg, "map[") {
				t.Fatalf("exit %d %v, want 2 saying %q", code, got, tc.says)
			}
		})
	}
	if l, err := f.st.JobList(t.Context(), store.JobListParams{}); err != nil || len(l.Jobs) != 0 {
		t.Fatalf("jobs queued after refused params files: %v %v", l.Jobs, err)
	}
}

// FuzzDecodeJSON: whatever a file holds, decoding it says what is wrong in words or nothing, and
// never panics.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"records": [{"type": "A"}]}`, `[1,2]`, "{\n\"a\":", `{"records": 5}`, ``, `{} {}`, `"\xff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rf api.RecordsFile
		p1 := decodeJSON(data, &rf)
		obj := map[string]json.RawMessage{}
		p2 := decodeJSON(data, &obj)
		for _, p := range []string{p1, p2} {
			if strings.Contains(p, "Go ") || strings.Contains(p, "json.RawMessage") || strings.Contains(p, "api.") {
				t.Fatalf("%q: %s", data, p)
			}
		}
	})
}
