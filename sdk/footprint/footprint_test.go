package footprint_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

const sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// web is a footprint using every kind and every optional member.
const web = `{
  "schema": "lexicon/footprint/v1",
  "files": [
    {"path": "/etc/nginx/nginx.conf", "sha256": "` + sum + `", "size": 4, "mode": "0644", "owner": "root", "group": "root", "enforce": true},
    {"path": "/srv/www/index.html", "sha256": "` + sum + `", "size": 4, "mode": "0640", "owner": "web", "group": "web"}
  ],
  "units": [{"name": "nginx.service", "enabled": true, "started": true, "files": ["/etc/nginx/nginx.conf"], "on_change": "reload"}],
  "users": [
    {"name": "web", "state": "present", "system": true, "shell": "/bin/bash", "home": "/srv/www", "groups": ["www-data"], "ssh_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl web@example"]},
    {"name": "old", "state": "absent"},
    {"name": "keep", "state": "present", "groups": null, "ssh_keys": []}
  ],
  "groups": [{"name": "www-data", "state": "present", "system": true}],
  "firewall": {"state": "present", "inbound": [
    {"protocol": "tcp", "port": 80},
    {"protocol": "tcp", "port": 22, "sources": ["10.0.0.0/8", "2001:db8::/32"]},
    {"protocol": "udp", "port": 60000, "to": 61000}
  ], "enforce": true},
  "sysctl": [{"key": "net.ipv4.ip_forward", "value": "1"}],
  "packages": [{"name": "nginx", "state": "present", "version": "1.22.1-9"}, {"name": "telnetd", "state": "absent"}]
}`

func TestDecodeWeb(t *testing.T) {
	fp, err := footprint.Decode([]byte(web))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range footprint.Items(fp) {
		ids = append(ids, it.ID)
	}
	want := "group:www-data user:web user:old user:keep package:nginx package:telnetd file:/etc/nginx/nginx.conf file:/srv/www/index.html " +
		"sysctl:net.ipv4.ip_forward firewall unit:nginx.service"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("items %s", got)
	}
	if fp.Users[2].Groups != nil || fp.Users[2].SSHKeys == nil || len(fp.Users[2].SSHKeys) != 0 {
		t.Fatalf("null must stay unmanaged (nil) and [] none (empty): %#v", fp.Users[2])
	}
	if !fp.Files[0].Enforce || fp.Files[1].Enforce || !fp.Firewall.Enforce {
		t.Fatal("enforce lost")
	}
	// What Decode reads, encoding/json writes back to the same footprint.
	b, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	again, err := footprint.Decode(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(fp, again) {
		t.Fatalf("round trip changed it:\n%#v\n%#v", fp, again)
	}
}

// bad are footprints each breaking one rule: the JSON pointer Decode must name, and whether the
// published schema refuses it too (false for rules a schema cannot say).
var bad = []struct {
	name, doc, field string
	schemaToo        bool
}{
	{"no schema", `{}`, "/schema", true},
	{"wrong schema", `{"schema": "lexicon/footprint/v2"}`, "/schema", true},
	{"unknown member", `{"schema": "lexicon/footprint/v1", "extra": 1}`, "/extra", true},
	{"unknown file member", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": "0644", "owner": "root", "group": "root", "content": "x"}]}`, "/files/0/content", true},
	{"repeated member", `{"schema": "lexicon/footprint/v1", "schema": "lexicon/footprint/v1"}`, "/schema", false},
	{"missing sha256", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "size": 1, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/sha256", true},
	{"short sha256", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "abc", "size": 1, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/sha256", true},
	{"relative path", `{"schema": "lexicon/footprint/v1", "files": [{"path": "etc/a", "sha256": "` + sum + `", "size": 1, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/path", true},
	{"unclean path", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/../root/.ssh/x", "sha256": "` + sum + `", "size": 1, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/path", false},
	{"setuid mode", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": "4755", "owner": "root", "group": "root"}]}`, "/files/0/mode", true},
	{"numeric mode", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": 420, "owner": "root", "group": "root"}]}`, "/files/0/mode", true},
	{"fractional size", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1.5, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/size", true},
	{"huge size", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 2147483648, "mode": "0644", "owner": "root", "group": "root"}]}`, "/files/0/size", true},
	{"bad owner", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": "0644", "owner": "Root", "group": "root"}]}`, "/files/0/owner", true},
	{"file twice", `{"schema": "lexicon/footprint/v1", "files": [{"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": "0644", "owner": "root", "group": "root"}, {"path": "/etc/a", "sha256": "` + sum + `", "size": 1, "mode": "0600", "owner": "root", "group": "root"}]}`, "/files/1/path", false},
	{"unit without suffix", `{"schema": "lexicon/footprint/v1", "units": [{"name": "nginx", "enabled": true, "started": true}]}`, "/units/0/name", true},
	{"unit option", `{"schema": "lexicon/footprint/v1", "units": [{"name": "-H.service", "enabled": true, "started": true}]}`, "/units/0/name", true},
	{"unit file not in footprint", `{"schema": "lexicon/footprint/v1", "units": [{"name": "a.service", "enabled": true, "started": true, "files": ["/etc/a"]}]}`, "/units/0/files/0", false},
	{"on_change", `{"schema": "lexicon/footprint/v1", "units": [{"name": "a.service", "enabled": true, "started": true, "on_change": "kill"}]}`, "/units/0/on_change", true},
	{"started as string", `{"schema": "lexicon/footprint/v1", "units": [{"name": "a.service", "enabled": true, "started": "yes"}]}`, "/units/0/started", true},
	{"user state", `{"schema": "lexicon/footprint/v1", "users": [{"name": "web", "state": "gone"}]}`, "/users/0/state", true},
	{"absent user with shell", `{"schema": "lexicon/footprint/v1", "users": [{"name": "web", "state": "absent", "shell": "/bin/sh"}]}`, "/users/0/shell", false},
	{"ssh key with newline", `{"schema": "lexicon/footprint/v1", "users": [{"name": "web", "state": "present", "ssh_keys": ["ssh-ed25519 AAAA\nssh-rsa BBBB"]}]}`, "/users/0/ssh_keys/0", true},
	{"ssh key one word", `{"schema": "lexicon/footprint/v1", "users": [{"name": "web", "state": "present", "ssh_keys": ["AAAA"]}]}`, "/users/0/ssh_keys/0", true},
	{"group listed twice", `{"schema": "lexicon/footprint/v1", "users": [{"name": "web", "state": "present", "groups": ["a", "a"]}]}`, "/users/0/groups/1", true},
	{"firewall port 0", `{"schema": "lexicon/footprint/v1", "firewall": {"state": "present", "inbound": [{"protocol": "tcp", "port": 0}]}}`, "/firewall/inbound/0/port", true},
	{"firewall protocol", `{"schema": "lexicon/footprint/v1", "firewall": {"state": "present", "inbound": [{"protocol": "icmp", "port": 1}]}}`, "/firewall/inbound/0/protocol", true},
	{"firewall range backwards", `{"schema": "lexicon/footprint/v1", "firewall": {"state": "present", "inbound": [{"protocol": "tcp", "port": 90, "to": 80}]}}`, "/firewall/inbound/0/to", false},
	{"source not a prefix", `{"schema": "lexicon/footprint/v1", "firewall": {"state": "present", "inbound": [{"protocol": "tcp", "port": 22, "sources": ["10.1.2.3/8"]}]}}`, "/firewall/inbound/0/sources/0", false},
	{"sources overlap", `{"schema": "lexicon/footprint/v1", "firewall": {"state": "present", "inbound": [{"protocol": "tcp", "port": 22, "sources": ["10.0.0.0/8", "10.1.0.0/16"]}]}}`, "/firewall/inbound/0/sources/1", false},
	{"firewall missing state", `{"schema": "lexicon/footprint/v1", "firewall": {"inbound": []}}`, "/firewall/state", true},
	{"sysctl key", `{"schema": "lexicon/footprint/v1", "sysctl": [{"key": "../../etc/shadow", "value": "1"}]}`, "/sysctl/0/key", true},
	{"sysctl one word", `{"schema": "lexicon/footprint/v1", "sysctl": [{"key": "kernel", "value": "1"}]}`, "/sysctl/0/key", true},
	{"sysctl value newline", `{"schema": "lexicon/footprint/v1", "sysctl": [{"key": "net.ipv4.ip_forward", "value": "1\n2"}]}`, "/sysctl/0/value", true},
	{"package name", `{"schema": "lexicon/footprint/v1", "packages": [{"name": "Nginx", "state": "present"}]}`, "/packages/0/name", true},
	{"package version absent", `{"schema": "lexicon/footprint/v1", "packages": [{"name": "nginx", "state": "absent", "version": "1.0"}]}`, "/packages/0/version", false},
	{"not an object", `[]`, "", true},
	{"files not an array", `{"schema": "lexicon/footprint/v1", "files": {}}`, "/files", true},
	{"trailing data", `{"schema": "lexicon/footprint/v1"} {}`, "", false},
}

func TestDecodeRefuses(t *testing.T) {
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := footprint.Decode([]byte(c.doc))
			if !errcode.Has(err, errcode.FootprintInvalid) {
				t.Fatalf("want footprint.invalid, got %v", err)
			}
			if got := errcode.From(err, "").Details[errcode.DetailField]; got != c.field {
				t.Fatalf("field %q, want %q (%v)", got, c.field, err)
			}
		})
	}
}

func TestDecodeTooLarge(t *testing.T) {
	doc := `{"schema": "lexicon/footprint/v1", "files": [` + strings.Repeat(" ", footprint.MaxBytes) + `]}`
	if _, err := footprint.Decode([]byte(doc)); !errcode.Has(err, errcode.FootprintInvalid) {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`{"schema": "lexicon/footprint/v1", "sysctl": [`)
	for i := range footprint.MaxItems + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"key":"a.b","value":"1"}`)
	}
	b.WriteString("]}")
	_, err := footprint.Decode(b.Bytes())
	if !errcode.Has(err, errcode.FootprintInvalid) || !strings.Contains(err.Error(), "at most") {
		t.Fatal(err)
	}
}

// TestSchemaAgrees holds the published schema and Decode to each other: both accept the web
// footprint, and the schema refuses every bad one it can express.
func TestSchemaAgrees(t *testing.T) {
	s := compile(t, footprint.Schema())
	if err := s.Validate(instance(t, web)); err != nil {
		t.Fatalf("the schema refuses a footprint Decode accepts: %v", err)
	}
	for _, c := range bad {
		err := s.Validate(instance(t, c.doc))
		if c.schemaToo && err == nil {
			t.Errorf("%s: the schema accepts what Decode refuses", c.name)
		}
		if !c.schemaToo && err != nil && c.name != "trailing data" {
			t.Errorf("%s: the schema refuses it now: mark it schemaToo", c.name)
		}
	}
}

func compile(t *testing.T, doc []byte) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("footprint.json", v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("footprint.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func instance(t *testing.T, doc string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		return map[string]any{"unparsable": true}
	}
	return v
}

func TestBounds(t *testing.T) {
	fp, err := footprint.Decode([]byte(web))
	if err != nil {
		t.Fatal(err)
	}
	all := footprint.Bounds{Paths: []string{"/etc/nginx", "/srv"}, Units: []string{"nginx*.service"}, Users: []string{"web", "old", "keep"},
		Groups: []string{"www-data"}, Sysctl: []string{"net.ipv4.*"}, Packages: []string{"nginx", "telnetd"}, Firewall: true}
	if r := all.Refusals(fp); len(r) != 0 {
		t.Fatalf("refused within bounds: %+v", r)
	}
	narrow := all
	narrow.Paths = []string{"/etc/nginx/conf.d", "/srv/www"}
	narrow.Groups = nil
	narrow.Firewall = false
	narrow.MaxFileBytes = 3
	var got []string
	for _, r := range narrow.Refusals(fp) {
		got = append(got, r.Item+"="+r.Code)
	}
	want := "group:www-data=footprint.refused user:web=footprint.refused file:/etc/nginx/nginx.conf=footprint.refused " +
		"file:/srv/www/index.html=footprint.too_large firewall=footprint.refused"
	if strings.Join(got, " ") != want {
		t.Fatalf("refusals %s", strings.Join(got, " "))
	}
	// /etc/nginx does not hold /etc/nginxx: a root is a folder, not a prefix.
	if _, ok := footprint.Root([]string{"/etc/nginx"}, "/etc/nginxx/a"); ok {
		t.Fatal("a root matched a longer name")
	}
	for _, b := range []footprint.Bounds{{Paths: []string{"etc"}}, {Units: []string{"["}}, {Users: []string{"a/b"}}, {MaxFileBytes: -1}} {
		if err := b.Validate(); !errcode.Has(err, errcode.PolicyUntrusted) {
			t.Errorf("%+v: %v", b, err)
		}
	}
}

func TestCompare(t *testing.T) {
	f := footprint.File{Path: "/etc/a", SHA256: sum, Size: 4, Mode: "0644", Owner: "root", Group: "adm"}
	same := capv1.FileState{Exists: true, Type: capv1.TypeFile, SHA256: sum, Mode: 0o644, Owner: "root", Group: "adm"}
	if d := footprint.CompareFile(f, same); d != nil {
		t.Fatal(d)
	}
	other := same
	other.SHA256, other.Mode, other.Owner, other.Group = strings.Repeat("0", 64), 0o600, "", ""
	other.UID, other.GID = 1234, 99
	if d := strings.Join(footprint.CompareFile(f, other), "; "); d != "content; mode 0600, not 0644; owner 1234, not root; group 99, not adm" {
		t.Fatal(d)
	}
	if d := footprint.CompareFile(f, capv1.FileState{Exists: true, Type: capv1.TypeSymlink}); !footprint.ContentDiffers(d) {
		t.Fatal(d)
	}
	u := footprint.User{Name: "web", State: "present", Shell: "/bin/bash", Groups: []string{"b", "a"}, SSHKeys: []string{}}
	if d := footprint.CompareUser(u, capv1.UserState{Name: "web", Exists: true, Shell: "/bin/bash", Groups: []string{"a", "b"}}); d != nil {
		t.Fatalf("no file and no keys are the same; group order does not matter: %v", d)
	}
	if d := footprint.CompareUnit(footprint.Unit{Name: "a.service", Enabled: true, Started: true}, capv1.Unit{LoadState: "loaded", UnitFileState: "static", ActiveState: "active"}); d != nil {
		t.Fatal(d)
	}
	if d := footprint.CompareSysctl(footprint.Sysctl{Key: "net.ipv4.tcp_rmem", Value: "4096 131072  6291456"}, "4096\t131072\t6291456", true); d != nil {
		t.Fatal(d)
	}
	fw := footprint.Firewall{State: "present", Inbound: []footprint.Rule{{Protocol: "tcp", Port: 80}}}
	read := capv1.NFTReadResult{Present: true, ListingSHA256: "l1", Applied: &capv1.NFTApplied{Rendered: footprint.TableDigest(fw), Listing: "l1"}}
	if d := footprint.CompareFirewall(fw, read); d != nil {
		t.Fatal(d)
	}
	read.ListingSHA256 = "l2"
	if d := footprint.CompareFirewall(fw, read); len(d) != 1 || d[0] != "changed outside Lexicon" {
		t.Fatal(d)
	}
}

func TestRenderTable(t *testing.T) {
	fw := footprint.Firewall{State: "present", Inbound: []footprint.Rule{
		{Protocol: "tcp", Port: 80},
		{Protocol: "tcp", Port: 22, Sources: []string{"192.168.0.0/16", "2001:db8::/32", "10.0.0.0/8"}},
		{Protocol: "udp", Port: 60000, To: 61000, Sources: []string{"fd00::/8"}},
	}}
	got := footprint.RenderTable(fw)
	for _, line := range []string{
		"\t\ttcp dport 80 accept\n",
		"\t\tip saddr { 10.0.0.0/8, 192.168.0.0/16 } tcp dport 22 accept\n",
		"\t\tip6 saddr 2001:db8::/32 tcp dport 22 accept\n",
		"\t\tip6 saddr fd00::/8 udp dport 60000-61000 accept\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("no %q in\n%s", line, got)
		}
	}
	if s := footprint.ApplyScript(footprint.Firewall{State: "absent"}); s != "table inet lexicon\ndelete table inet lexicon\n" {
		t.Fatal(s)
	}
}

func TestSelect(t *testing.T) {
	fp, err := footprint.Decode([]byte(web))
	if err != nil {
		t.Fatal(err)
	}
	part := footprint.Select(fp, map[string]bool{"file:/srv/www/index.html": true, "firewall": true, "user:old": true})
	if len(part.Files) != 1 || part.Firewall == nil || len(part.Users) != 1 || len(part.Units) != 0 {
		t.Fatalf("%+v", part)
	}
}
