package roles

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

const webYAML = `
name: web
description: the web servers
enforce: true
packages:
  - name: nginx
files:
  - path: /etc/nginx/nginx.conf
    content: "worker_processes 2;\n"
    mode: "0640"
    group: www-data
  - path: /srv/www/logo.bin
    content_base64: AAEC
units:
  - name: nginx.service
    files: [/etc/nginx/nginx.conf]
    on_change: reload
users:
  - name: deploy
    shell: /bin/bash
    groups: [www-data]
    ssh_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG deploy@ci"]
groups:
  - name: www-data
    system: true
firewall:
  inbound:
    - {protocol: tcp, port: 80}
    - {protocol: tcp, port: 443, sources: [10.0.0.0/8]}
sysctl:
  - {key: net.core.somaxconn, value: "1024"}
`

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestParseYAML(t *testing.T) {
	p, err := Parse([]byte(webYAML))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Role
	if r.Name != "web" || !r.Enforce || r.Description != "the web servers" {
		t.Fatalf("role = %+v", r)
	}
	fp := r.Footprint
	conf := fp.Files[0]
	if conf.SHA256 != digest("worker_processes 2;\n") || conf.Size != 20 || conf.Mode != "0640" || conf.Owner != "root" || conf.Group != "www-data" || !conf.Enforce {
		t.Errorf("file = %+v", conf)
	}
	if string(p.Contents[conf.SHA256]) != "worker_processes 2;\n" {
		t.Errorf("content of %s not kept", conf.SHA256)
	}
	if bin := fp.Files[1]; bin.SHA256 != digest("\x00\x01\x02") || bin.Mode != "0644" || bin.Owner != "root" {
		t.Errorf("base64 file = %+v", bin)
	}
	if u := fp.Units[0]; !u.Enabled || !u.Started || u.OnChange != "reload" {
		t.Errorf("unit defaults = %+v", u)
	}
	if fp.Packages[0].State != footprint.StatePresent || fp.Users[0].State != footprint.StatePresent || fp.Firewall.State != footprint.StatePresent {
		t.Errorf("state defaults: %+v %+v %+v", fp.Packages[0], fp.Users[0], fp.Firewall)
	}
	if len(fp.Firewall.Inbound) != 2 || fp.Firewall.Inbound[0].Port != 80 {
		t.Errorf("firewall = %+v", fp.Firewall)
	}
	if err := footprint.Validate(fp); err != nil {
		t.Errorf("rendered footprint: %v", err)
	}
}

func TestParseJSON(t *testing.T) {
	p, err := Parse([]byte(`{"name":"db","packages":[{"name":"postgresql","state":"absent"}],"units":[{"name":"pg.service","enabled":false}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fp := p.Role.Footprint
	if fp.Packages[0].State != footprint.StateAbsent || fp.Units[0].Enabled || !fp.Units[0].Started || fp.Packages[0].Enforce {
		t.Errorf("footprint = %+v", fp)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc, code, field string
	}{
		{"not yaml", "name: [", errcode.RoleInvalid, ""},
		{"no name", "packages: []", errcode.RoleInvalid, "/name"},
		{"bad name", "name: Web", errcode.RoleInvalid, "/name"},
		{"unknown member", "name: web\ncolour: blue", errcode.RoleInvalid, "/colour"},
		{"mode as octal number", "name: web\nfiles: [{path: /etc/a, content: x, mode: 0644}]", errcode.RoleInvalid, "/files/0/mode"},
		{"mode setuid", "name: web\nfiles: [{path: /etc/a, content: x, mode: \"4755\"}]", errcode.RoleInvalid, "/files/0/mode"},
		{"two contents", "name: web\nfiles: [{path: /etc/a, content: x, content_base64: eA==}]", errcode.RoleInvalid, "/files/0"},
		{"no content", "name: web\nfiles: [{path: /etc/a}]", errcode.RoleInvalid, "/files/0/content"},
		{"bad base64", "name: web\nfiles: [{path: /etc/a, content_base64: '!!'}]", errcode.RoleInvalid, "/files/0/content_base64"},
		{"unclean path", "name: web\nfiles: [{path: /etc/../a, content: x}]", errcode.RoleInvalid, "/files/0/path"},
		{"path twice", "name: web\nfiles: [{path: /etc/a, content: x}, {path: /etc/a, content: y}]", errcode.RoleInvalid, "/files/1/path"},
		{"unit file not in role", "name: web\nunits: [{name: a.service, files: [/etc/a]}]", errcode.RoleInvalid, "/units/0/files/0"},
		{"bad port", "name: web\nfirewall: {inbound: [{protocol: tcp, port: 0}]}", errcode.RoleInvalid, "/firewall/inbound/0/port"},
		{"repeated key", "name: web\nname: db", errcode.RoleInvalid, "/name"},
		{"alias", "name: web\ngroups: &g [{name: a}]\nusers: *g", errcode.RoleInvalid, "/users"},
		{"two documents", "name: web\n---\nname: db", errcode.RoleInvalid, ""},
		{"not an object", "- a", errcode.RoleInvalid, ""},
		{"sysctl value with a newline", "name: web\nsysctl: [{key: a.b, value: \"1\\n2\"}]", errcode.RoleInvalid, "/sysctl/0/value"},
		{"content over the limit", "name: web\nfiles: [{path: /etc/a, content: \"" + strings.Repeat("x", MaxContentBytes+1) + "\"}]", errcode.RoleTooLarge, "/files/0"},
		{"file over the limit", "name: web\ndescription: \"" + strings.Repeat("x", MaxFileBytes) + "\"", errcode.RoleTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if !errcode.Has(err, tc.code) {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
			e := errcode.From(err, "")
			if f, _ := e.Details[errcode.DetailField].(string); tc.field != "" && f != tc.field {
				t.Errorf("field = %q, want %q (%v)", f, tc.field, err)
			}
		})
	}
}

func TestSchemaPublished(t *testing.T) {
	s := api.RoleSchema()
	if !strings.Contains(string(s), `"$id": "https://lexicon-fleet.github.io/schemas/role/v1.json"`) {
		t.Fatal("the published schema is not the role schema")
	}
	if _, err := compiled(); err != nil {
		t.Fatal(err)
	}
}
