package backup_test

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzParseIdentity: a key file never panics the parser, a refusal is key.malformed and never quotes
// the file (its line is a secret key), and a key it accepts writes out (KeyFile) to the same key.
func FuzzParseIdentity(f *testing.F) {
	id, _ := age.GenerateX25519Identity()
	f.Add([]byte(backup.KeyFile(id, time.Unix(0, 0))))
	f.Add([]byte("# comment\n\n" + id.String() + "\n" + id.String()))
	f.Add([]byte("AGE-SECRET-KEY-1NOTAKEY"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := backup.ParseIdentity(data)
		if err != nil {
			if !errcode.Has(err, errcode.KeyMalformed) {
				t.Fatalf("refused with %v, want key.malformed", err)
			}
			if line := strings.TrimSpace(string(data)); len(line) > 80 && strings.Contains(err.Error(), line) { // longer than any message
				t.Fatalf("the refusal quotes the file: %v", err)
			}
			return
		}
		again, err := backup.ParseIdentity([]byte(backup.KeyFile(got, time.Unix(0, 0))))
		if err != nil || again.String() != got.String() {
			t.Fatalf("an accepted key does not survive KeyFile: %v", err)
		}
	})
}

// FuzzParseRecipients: recipients from a grant never panic the parser; a refusal is
// backup.grant_invalid; each accepted one is an X25519 recipient that prints as given.
func FuzzParseRecipients(f *testing.F) {
	id, _ := age.GenerateX25519Identity()
	f.Add(id.Recipient().String(), "")
	f.Add(id.Recipient().String(), id.Recipient().String())
	f.Add("age1", "ssh-ed25519 AAAA")
	f.Fuzz(func(t *testing.T, a, b string) {
		in := []string{a}
		if b != "" {
			in = append(in, b)
		}
		rs, err := backup.ParseRecipients(in)
		if err != nil {
			if !errcode.Has(err, errcode.BackupGrantInvalid) {
				t.Fatalf("refused with %v, want backup.grant_invalid", err)
			}
			return
		}
		for i, r := range rs {
			x, ok := r.(*age.X25519Recipient)
			if !ok || x.String() != in[i] {
				t.Fatalf("accepted %q as %v", in[i], r)
			}
		}
	})
}

// FuzzPolicyValidate: the backup section of a node's policy file never panics its checks, a refusal
// is policy.untrusted, and a section it accepts names only absolute clean folders and plain database
// names, with a way to reach PostgreSQL when it names any.
func FuzzPolicyValidate(f *testing.F) {
	f.Add([]byte(`{"paths": ["/srv"], "restore_paths": ["/srv/restored"], "databases": ["app"], "postgres": {"bin": "/usr/lib/postgresql/15/bin"}}`))
	f.Add([]byte(`{"paths": ["/srv/../etc", "relative"], "databases": ["host=evil"]}`))
	f.Add([]byte(`{"databases": ["app"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p backup.Policy
		if json.Unmarshal(data, &p) != nil {
			return
		}
		if err := p.Validate(); err != nil {
			if !errcode.Has(err, errcode.PolicyUntrusted) {
				t.Fatalf("refused with %v, want policy.untrusted", err)
			}
			return
		}
		for _, d := range append(append([]string{}, p.Paths...), p.RestorePaths...) {
			if !path.IsAbs(d) || path.Clean(d) != d {
				t.Fatalf("accepted the folder %q", d)
			}
		}
		for _, db := range p.Databases {
			if !backup.ValidDatabaseName(db) {
				t.Fatalf("accepted the database %q", db)
			}
		}
		if len(p.Databases) > 0 && p.Postgres == nil {
			t.Fatal("accepted databases with no way to reach PostgreSQL")
		}
	})
}

// FuzzRunOfKey: a key from the plane's listing of a bucket never panics the parser, and a key it
// places in a run lies directly under that run's folder of the node, by a plain name.
func FuzzRunOfKey(f *testing.F) {
	const node = "node_01hzzzzzzzzzzzzzzzzzzzzzzz"
	prefix := backup.NodePrefix("fleet", node)
	run := backup.NewRunID(time.Unix(1700000000, 0), "")
	f.Add(backup.ManifestKey("fleet", node, run))
	f.Add(backup.ObjectKey("fleet", node, run, 1))
	f.Add(prefix + run + "/../x")
	f.Add(prefix + "not-a-run/manifest.json")
	f.Fuzz(func(t *testing.T, key string) {
		got, manifest, ok := backup.RunOfKey(prefix, key)
		if !ok {
			return
		}
		name, cut := strings.CutPrefix(key, prefix+got+"/")
		if !backup.ValidRunID(got) || !cut || name == "" || strings.Contains(name, "/") || manifest != (name == backup.ManifestName) {
			t.Fatalf("%q placed in run %q (manifest %v)", key, got, manifest)
		}
	})
}
