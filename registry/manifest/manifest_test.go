package manifest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const goodWord = `{
  "schema": "lexicon/manifest/v1",
  "name": "disk_usage",
  "kind": "word",
  "version": "1.0.0",
  "class": "look",
  "summary": "Largest directories under declared roots.",
  "params": {"type": "object", "additionalProperties": false,
             "properties": {"root": {"type": "string"}, "top": {"type": "integer", "minimum": 1, "maximum": 50}},
             "required": ["root"]},
  "output": {"type": "object", "properties": {"entries": {"type": "array"}, "truncated": {"type": "boolean"}}, "required": ["entries"]},
  "capabilities": [{"cap": "fs.list", "paths": ["/var", "/srv"]}, {"cap": "fs.stat", "paths": ["/var"]}],
  "limits": {"memory_mib": 64, "wall_time_ms": 10000, "output_bytes": 65536},
  "module": {"file": "disk_usage.wasm"}
}`

func mustParse(t *testing.T, s string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

func TestParseGoodWord(t *testing.T) {
	m := mustParse(t, goodWord)
	if m.SubjectName() != "word/disk_usage@1.0.0.wasm" || m.ManifestSubjectName() != "manifest/disk_usage@1.0.0.json" {
		t.Fatalf("subjects %q %q", m.SubjectName(), m.ManifestSubjectName())
	}
	if m.ParamsSchema() == nil || m.OutputSchema() == nil {
		t.Fatal("schemas not compiled")
	}
}

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		name, from, to, code, field string
	}{
		{"unknown field", `"kind": "word",`, `"kind": "word", "shell": "rm -rf /",`, errcode.ManifestUnknownField, "shell"},
		{"unknown nested field", `{"cap": "fs.list",`, `{"cap": "fs.list", "recursive": true,`, errcode.ManifestUnknownField, "recursive"},
		{"params open", `"additionalProperties": false,`, ``, errcode.ManifestParamsOpen, "params.additionalProperties"},
		{"params additionalProperties true", `"additionalProperties": false,`, `"additionalProperties": true,`, errcode.ManifestParamsOpen, "params.additionalProperties"},
		{"params not JSON Schema", `"minimum": 1,`, `"minimum": "one",`, errcode.ManifestSchemaInvalid, "params"},
		{"output not JSON Schema", `"truncated": {"type": "boolean"}`, `"truncated": {"type": "boolish"}`, errcode.ManifestSchemaInvalid, "output"},
		{"remote ref", `"root": {"type": "string"}`, `"root": {"$ref": "file:///etc/shadow"}`, errcode.ManifestSchemaInvalid, "params"},
		{"wrong draft", `"type": "object", "additionalProperties"`, `"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "additionalProperties"`, errcode.ManifestSchemaInvalid, "params"},
		{"unknown capability", `"cap": "fs.list"`, `"cap": "shell.exec"`, errcode.ManifestInvalid, "capabilities[0].cap"},
		{"capability without bounds", `"cap": "fs.list", "paths": ["/var", "/srv"]`, `"cap": "fs.list"`, errcode.ManifestInvalid, "capabilities[0].paths"},
		{"bound the capability does not take", `"paths": ["/var"]}`, `"paths": ["/var"], "hosts": ["example.com"]}`, errcode.ManifestInvalid, "capabilities[1].hosts"},
		{"relative root", `["/var", "/srv"]`, `["/var", "srv/../etc"]`, errcode.ManifestInvalid, "capabilities[0].paths[1]"},
		{"change cap in a look word", `{"cap": "fs.stat", "paths": ["/var"]}`, `{"cap": "fs.write", "paths": ["/var"]}`, errcode.ManifestInvalid, "capabilities[1].cap"},
		{"bad kind", `"kind": "word"`, `"kind": "script"`, errcode.ManifestInvalid, "kind"},
		{"bad class", `"class": "look"`, `"class": "cloud"`, errcode.ManifestInvalid, "class"},
		{"bad version", `"version": "1.0.0"`, `"version": "1.0"`, errcode.ManifestInvalid, "version"},
		{"bad name", `"name": "disk_usage"`, `"name": "../disk"`, errcode.ManifestInvalid, "name"},
		{"file with a path", `"file": "disk_usage.wasm"`, `"file": "../x.wasm"`, errcode.ManifestInvalid, "module.file"},
		{"memory over the maximum", `"memory_mib": 64`, `"memory_mib": 99999`, errcode.ManifestInvalid, "limits.memory_mib"},
		{"wrong schema", `"lexicon/manifest/v1"`, `"lexicon/manifest/v9"`, errcode.ManifestInvalid, "schema"},
		{"duplicate key", `"kind": "word",`, `"kind": "word", "kind": "driver",`, errcode.ManifestMalformed, ""},
		{"trailing data", goodWord, goodWord + `{}`, errcode.ManifestMalformed, ""},
		{"not JSON", goodWord, `{"schema": `, errcode.ManifestMalformed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(goodWord, tc.from, tc.to, 1)
			if src == goodWord && tc.from != goodWord {
				t.Fatalf("replacement %q did not apply", tc.from)
			}
			if tc.from == goodWord {
				src = tc.to
			}
			_, err := manifest.Parse([]byte(src))
			if got := errcode.Code(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			if tc.field != "" {
				e := errcode.From(err, "")
				if e.Details["field"] != tc.field {
					t.Fatalf("field = %v, want %q", e.Details["field"], tc.field)
				}
			}
		})
	}
}

// TestParseTooLarge: a manifest is read up to MaxSize bytes and refused as statement.too_large above it,
// before it is parsed.
func TestParseTooLarge(t *testing.T) {
	pad := func(n int) []byte { return []byte(goodWord + strings.Repeat(" ", n-len(goodWord))) }
	if _, err := manifest.Parse(pad(manifest.MaxSize)); err != nil {
		t.Fatalf("manifest of exactly %d bytes: %v", manifest.MaxSize, err)
	}
	_, err := manifest.Parse(pad(manifest.MaxSize + 1))
	if errcode.Code(err) != errcode.StatementTooLarge || !strings.Contains(err.Error(), fmt.Sprintf("manifest is over %d bytes", manifest.MaxSize)) {
		t.Fatalf("err = %v", err)
	}
	// Size is checked first: an oversized manifest that is not even JSON is still too large.
	if _, err := manifest.Parse([]byte(strings.Repeat("{", manifest.MaxSize+1))); errcode.Code(err) != errcode.StatementTooLarge {
		t.Fatalf("oversized non-JSON: %v", err)
	}
}

func TestCheckParamsNamesField(t *testing.T) {
	m := mustParse(t, goodWord)
	cases := []struct{ params, field string }{
		{`{"root": 5}`, "/root"},
		{`{"root": "/var", "top": 500}`, "/top"},
		{`{"root": "/var", "shell": "x"}`, "/shell"},
		{`{}`, "/root"},
		{`[1]`, ""},
		{`{"root": `, ""},
	}
	for _, tc := range cases {
		err := m.CheckParams([]byte(tc.params))
		if errcode.Code(err) != errcode.WordParamInvalid {
			t.Fatalf("%s: err = %v", tc.params, err)
		}
		if f := errcode.From(err, "").Details["field"]; f != tc.field {
			t.Fatalf("%s: field = %v, want %q", tc.params, f, tc.field)
		}
	}
	if err := m.CheckParams([]byte(`{"root": "/var", "top": 5}`)); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckOutput([]byte(`{"truncated": true}`)); errcode.Code(err) != errcode.WordOutputInvalid {
		t.Fatalf("output err = %v", err)
	}
}

// TestRecipeInterval: a recipe without an interval is checked every 10 minutes; one that names an
// interval keeps it; an interval outside 1m..24h is refused with the field named.
func TestRecipeInterval(t *testing.T) {
	recipe := func(interval string) string {
		return `{"schema": "lexicon/manifest/v1", "name": "unit_health", "kind": "recipe", "version": "1.0.0",
		  "summary": "Declared units are active.", "capabilities": [{"cap": "systemd.unit", "units": ["nginx.service"]}],
		  "recipe": {` + interval + `"scope": "host", "no_repair": true}, "module": {"file": "unit_health.wasm"}}`
	}
	for _, c := range []struct {
		name, interval string
		want           time.Duration
	}{
		{"absent", ``, 10 * time.Minute},
		{"empty", `"interval": "", `, 10 * time.Minute},
		{"1m", `"interval": "1m", `, time.Minute},
		{"5m", `"interval": "5m", `, 5 * time.Minute},
		{"10m", `"interval": "10m", `, 10 * time.Minute},
		{"1h30m", `"interval": "1h30m", `, 90 * time.Minute},
		{"24h", `"interval": "24h", `, 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mustParse(t, recipe(c.interval)).Recipe.CheckInterval(); got != c.want {
				t.Fatalf("interval %v, want %v", got, c.want)
			}
		})
	}
	if got := (*manifest.Recipe)(nil).CheckInterval(); got != 10*time.Minute {
		t.Fatalf("no recipe section: interval %v", got)
	}
	for _, bad := range []string{`"interval": "59s", `, `"interval": "25h", `, `"interval": "ten minutes", `, `"interval": "-5m", `} {
		_, err := manifest.Parse([]byte(recipe(bad)))
		if errcode.Code(err) != errcode.ManifestInvalid || errcode.From(err, "").Details["field"] != "recipe.interval" {
			t.Fatalf("%s: err = %v", bad, err)
		}
	}
}

func TestRecipeAndDriver(t *testing.T) {
	recipe := `{"schema": "lexicon/manifest/v1", "name": "unit_health", "kind": "recipe", "version": "1.0.0",
	  "summary": "Declared units are active.", "capabilities": [{"cap": "systemd.unit", "units": ["nginx.service"]}],
	  "recipe": {"interval": "5m", "repair": "restart_unit", "scope": "host", "node_derived": true},
	  "module": {"file": "unit_health.wasm"}}`
	m := mustParse(t, recipe)
	if m.Recipe.CheckInterval().Minutes() != 5 || m.SubjectName() != "recipe/unit_health@1.0.0.wasm" {
		t.Fatalf("recipe parsed wrong: %+v", m.Recipe)
	}
	bad := strings.Replace(recipe, `"cap": "systemd.unit"`, `"cap": "systemd.restart"`, 1)
	if _, err := manifest.Parse([]byte(bad)); errcode.Code(err) != errcode.ManifestInvalid {
		t.Fatalf("recipe with a change capability: %v", err)
	}
	driver := `{"schema": "lexicon/manifest/v1", "name": "linode", "kind": "driver", "version": "1.2.0", "class": "cloud",
	  "summary": "Linode instances.", "platforms": ["linux/amd64"], "module": {"file": "lexicon-driver-cloud-linode"}}`
	d := mustParse(t, driver)
	if d.SubjectName() != "driver/cloud-linode@1.2.0/linux-amd64" || d.Privileged {
		t.Fatalf("driver subject %q, privileged %v", d.SubjectName(), d.Privileged)
	}
	if p := mustParse(t, strings.Replace(driver, `"class": "cloud",`, `"class": "cloud", "privileged": true,`, 1)); !p.Privileged {
		t.Fatal("a driver's privileged was not read")
	}
	if _, err := manifest.Parse([]byte(strings.Replace(recipe, `"kind": "recipe",`, `"kind": "recipe", "privileged": true,`, 1))); errcode.Code(err) != errcode.ManifestInvalid {
		t.Fatalf("a privileged recipe: %v", err)
	}
}

func TestDeclaration(t *testing.T) {
	recipe := `{"schema": "lexicon/manifest/v1", "name": "cert_expiry", "kind": "recipe", "version": "1.0.0", "summary": "x",
	  "params": {"type": "object", "additionalProperties": false, "properties": {
	    "names": {"type": "array", "items": {"type": "string"}},
	    "min_days": {"type": "integer", "minimum": 1, "default": 14},
	    "note": {"type": "string"}}},
	  "output": {"type": "object"}, "recipe": {"scope": "site"}, "module": {"file": "c.wasm"}}`
	m := mustParse(t, recipe)
	cases := []struct {
		names []string
		want  string
	}{
		{nil, `{"min_days":14}`},
		{[]string{"www.example.com", "example.com:8443"}, `{"min_days":14,"names":["www.example.com","example.com:8443"]}`},
	}
	for _, tc := range cases {
		got, err := m.Declaration(tc.names)
		if err != nil || string(got) != tc.want {
			t.Errorf("Declaration(%v) = %s, %v; want %s", tc.names, got, err, tc.want)
		}
	}
	bad := mustParse(t, strings.Replace(recipe, `"default": 14`, `"default": 0`, 1))
	if _, err := bad.Declaration(nil); errcode.Code(err) != errcode.WordParamInvalid {
		t.Fatalf("a default its own schema refuses: %v", err)
	}
	none := mustParse(t, `{"schema": "lexicon/manifest/v1", "name": "x", "kind": "recipe", "version": "1.0.0", "summary": "x",
	  "recipe": {"scope": "any"}, "module": {"file": "x.wasm"}}`)
	if got, err := none.Declaration([]string{"a"}); err != nil || string(got) != `{}` {
		t.Fatalf("no params: %s %v", got, err)
	}
}

// TestRepairCapabilityBounds: fs.remove, journal.vacuum and systemd.enable change the machine, so they
// need class change, and each is fenced by bounds a manifest cannot leave open: fs.remove by roots and
// base-name patterns narrower than "*", journal.vacuum by a floor no lower than MinJournalBytes.
func TestRepairCapabilityBounds(t *testing.T) {
	change := strings.Replace(goodWord, `"class": "look"`, `"class": "change"`, 1)
	caps := `[{"cap": "fs.list", "paths": ["/var", "/srv"]}, {"cap": "fs.stat", "paths": ["/var"]}]`
	cases := []struct {
		name, word, cap, code, field string
	}{
		{"remove", change, `{"cap": "fs.remove", "paths": ["/var/log"], "patterns": ["*.gz", "*.[0-9]"], "min_age_s": 86400}`, "", ""},
		{"remove in a look word", goodWord, `{"cap": "fs.remove", "paths": ["/var/log"], "patterns": ["*.gz"]}`, errcode.ManifestInvalid, "capabilities[2].cap"},
		{"remove without patterns", change, `{"cap": "fs.remove", "paths": ["/var/log"]}`, errcode.ManifestInvalid, "capabilities[2].patterns"},
		{"remove without roots", change, `{"cap": "fs.remove", "patterns": ["*.gz"]}`, errcode.ManifestInvalid, "capabilities[2].paths"},
		{"remove everything", change, `{"cap": "fs.remove", "paths": ["/var/log"], "patterns": ["*"]}`, errcode.ManifestInvalid, "capabilities[2].patterns[0]"},
		{"remove into a folder", change, `{"cap": "fs.remove", "paths": ["/var"], "patterns": ["log/*.gz"]}`, errcode.ManifestInvalid, "capabilities[2].patterns[0]"},
		{"remove negative age", change, `{"cap": "fs.remove", "paths": ["/var/log"], "patterns": ["*.gz"], "min_age_s": -1}`, errcode.ManifestInvalid, "capabilities[2]"},
		{"patterns on another cap", change, `{"cap": "fs.write", "paths": ["/var/log"], "patterns": ["*.gz"]}`, errcode.ManifestInvalid, "capabilities[2].patterns"},
		{"vacuum", change, `{"cap": "journal.vacuum", "min_bytes": 268435456}`, "", ""},
		{"vacuum without floor", change, `{"cap": "journal.vacuum"}`, errcode.ManifestInvalid, "capabilities[2].min_bytes"},
		{"vacuum to nothing", change, `{"cap": "journal.vacuum", "min_bytes": 1024}`, errcode.ManifestInvalid, "capabilities[2].min_bytes"},
		{"vacuum in a look word", goodWord, `{"cap": "journal.vacuum", "min_bytes": 268435456}`, errcode.ManifestInvalid, "capabilities[2].cap"},
		{"enable", change, `{"cap": "systemd.enable", "units": ["lexicon-agent.service"]}`, "", ""},
		{"enable without units", change, `{"cap": "systemd.enable"}`, errcode.ManifestInvalid, "capabilities[2].units"},
		{"node renewal", change, `{"cap": "exec.pinned", "programs": [{"path": "@renewal", "args": {"type": "array", "maxItems": 0}}]}`, "", ""},
		{"node renewal with a digest", change, `{"cap": "exec.pinned", "programs": [{"path": "@renewal", "sha256": "` + strings.Repeat("a", 64) + `", "args": {"type": "array"}}]}`, errcode.ManifestInvalid, "capabilities[2].programs[0].sha256"},
		{"node renewal without an args schema", change, `{"cap": "exec.pinned", "programs": [{"path": "@renewal"}]}`, errcode.ManifestInvalid, "capabilities[2].programs[0].args"},
		{"another node program", change, `{"cap": "exec.pinned", "programs": [{"path": "@shell", "args": {"type": "array"}}]}`, errcode.ManifestInvalid, "capabilities[2].programs[0].path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(tc.word, caps, caps[:len(caps)-1]+", "+tc.cap+"]", 1)
			_, err := manifest.Parse([]byte(src))
			if got := errcode.Code(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			if tc.field != "" {
				if f := errcode.From(err, "").Details["field"]; f != tc.field {
					t.Fatalf("field = %v, want %q", f, tc.field)
				}
			}
		})
	}
}
