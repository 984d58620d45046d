package ui

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/url"
	"strings"
	"testing"
)

const richSchema = `{"type": "object", "required": ["root", "mode"], "additionalProperties": false, "properties": {
  "root": {"type": "string", "pattern": "^/", "minLength": 1, "maxLength": 4096},
  "top": {"type": "integer", "minimum": 1, "maximum": 50},
  "ratio": {"type": "number"},
  "follow": {"type": "boolean"},
  "mode": {"enum": ["fast", "full"]},
  "units": {"type": "array", "items": {"type": "string"}},
  "ports": {"type": "array", "items": {"type": "integer"}},
  "limits": {"type": "object", "required": ["cpu"], "properties": {"cpu": {"type": "integer", "minimum": 0}, "note": {"type": "string"}}}}}`

func richFields(t *testing.T) []*field {
	t.Helper()
	var s schema
	if err := json.Unmarshal([]byte(richSchema), &s); err != nil {
		t.Fatal(err)
	}
	return fields(&s, "")
}

func TestFormFromSchema(t *testing.T) {
	fs := richFields(t)
	var names []string
	for _, f := range fs {
		names = append(names, f.Path+":"+f.Kind)
	}
	want := "/mode:enum /root:string /follow:boolean /limits:object /ports:array /ratio:number /top:integer /units:array"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("fields\n got %s\nwant %s", got, want)
	}
	u := New(Config{})
	var b bytes.Buffer
	if err := u.pages["run"].ExecuteTemplate(&b, "fields", fs); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, w := range []string{
		`name="/root" value="" pattern="[\s\S]*(?:^/)[\s\S]*" minlength="1" maxlength="4096" required`,
		`type="number" name="/top" value="" step="1" min="1" max="50"`,
		`<option value="fast"`, `name="/limits/cpu"`, `<legend>limits</legend>`, `placeholder="one integer a line"`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("the form lacks %s\n%s", w, html)
		}
	}
}

func TestFillParams(t *testing.T) {
	fs := richFields(t)
	got, ok := fill(fs, url.Values{"/root": {"/var"}, "/top": {"7"}, "/follow": {"true"}, "/mode": {"full"},
		"/ports": {"22\n\n443\r\n"}, "/limits/cpu": {"2"}, "/units": {""}})
	if !ok {
		t.Fatal("refused a good form")
	}
	b, _ := json.Marshal(got)
	if want := `{"follow":true,"limits":{"cpu":2},"mode":"full","ports":[22,443],"root":"/var","top":7}`; string(b) != want {
		t.Fatalf("params\n got %s\nwant %s", b, want)
	}
	fs = richFields(t)
	if _, ok := fill(fs, url.Values{"/root": {"/"}, "/mode": {"fast"}, "/top": {"ten"}, "/limits/cpu": {"1"}}); ok {
		t.Fatal("took ten for an integer")
	}
	if !mark(fs, "/limits/cpu", "must be >= 0") || fs[3].Fields[0].Error != "must be >= 0" {
		t.Fatal("the plane's error did not reach the nested field")
	}
	for _, f := range fs {
		if f.Path == "/top" && f.Error == "" {
			t.Fatal("no error next to /top")
		}
	}
}

func FuzzFill(f *testing.F) {
	f.Add("/root", "/var", "/top", "7")
	f.Add("/ports", "1\n2\nx", "/limits/cpu", "-1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		var s schema
		_ = json.Unmarshal([]byte(richSchema), &s)
		fs := fields(&s, "")
		params, _ := fill(fs, url.Values{k1: {v1}, k2: {v2}})
		if _, err := json.Marshal(params); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		tm := template.Must(New(Config{}).pages["run"].Clone())
		if err := tm.ExecuteTemplate(&b, "fields", fs); err != nil {
			t.Fatal(err)
		}
	})
}
