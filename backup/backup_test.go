package backup_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func recipient(t testing.TB) string {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient().String()
}

// validManifest is an incremental run with files, a database and an index.
func validManifest(t testing.TB) *backup.Manifest {
	base := "20260903T020000.000Z-1a2b3c4d"
	run := "20260904T020000.000Z-0badcafe"
	key := func(i string) string { return "fleet/web-1/" + run + "/" + i + ".age" }
	return &backup.Manifest{
		Schema: backup.ManifestSchema, Node: "web-1", Run: run, Kind: backup.KindIncremental, Chain: []string{base, run},
		Started: time.Date(2026, 9, 4, 2, 0, 0, 0, time.UTC), Finished: time.Date(2026, 9, 4, 2, 1, 0, 0, time.UTC),
		Recipients: []string{recipient(t), recipient(t)},
		Objects: []backup.Object{
			{Key: key("000001"), Role: backup.RoleFiles, Seq: 1, Size: 100, Plain: 60, SHA256: sum},
			{Key: key("000002"), Role: backup.RoleFiles, Seq: 2, Size: 100, Plain: 60, SHA256: sum},
			{Key: key("000003"), Role: backup.RoleDatabase, Database: "app", Seq: 1, Size: 50, Plain: 10, SHA256: sum},
			{Key: key("000004"), Role: backup.RoleIndex, Seq: 1, Size: 70, Plain: 30, SHA256: sum},
		},
		Files:     backup.Files{Count: 3, Bytes: 120, Stored: 1, StoredBytes: 60},
		Databases: []backup.Database{{Name: "app", Bytes: 10}},
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := validManifest(t)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := backup.ParseManifest(b)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if !reflect.DeepEqual(got, m) || got.Parent() != m.Chain[0] || got.Size() != 320 || len(got.Stream(backup.RoleFiles, "")) != 2 {
		t.Fatalf("round trip changed the manifest: %+v", got)
	}
}

// TestManifestRules: every rule of the format refuses a manifest that breaks it, naming the field.
func TestManifestRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(m *backup.Manifest)
		field string
	}{
		{"another schema", func(m *backup.Manifest) { m.Schema = "lexicon/backup-manifest/v2" }, "schema"},
		{"a node id with a slash", func(m *backup.Manifest) { m.Node = "../other" }, "node"},
		{"a run id that is not one", func(m *backup.Manifest) { m.Run = "latest" }, "run"},
		{"finished before it started", func(m *backup.Manifest) { m.Finished = m.Started.Add(-time.Second) }, "finished"},
		{"an unknown kind", func(m *backup.Manifest) { m.Kind = "differential" }, "kind"},
		{"an incremental chain of one", func(m *backup.Manifest) { m.Chain = m.Chain[1:] }, "chain"},
		{"a full run with a chain", func(m *backup.Manifest) { m.Kind = backup.KindFull }, "chain"},
		{"a chain out of order", func(m *backup.Manifest) { m.Chain[0] = "20270101T000000.000Z-00000000" }, "chain/1"},
		{"a chain not ending with the run", func(m *backup.Manifest) { m.Chain = []string{m.Chain[0], "20260903T030000.000Z-00000000"} }, "chain"},
		{"no recipient", func(m *backup.Manifest) { m.Recipients = nil }, "recipients"},
		{"a recipient that is not X25519", func(m *backup.Manifest) { m.Recipients[1] = "ssh-ed25519 AAAA" }, "recipients/1"},
		{"a key twice", func(m *backup.Manifest) { m.Objects[1].Key = m.Objects[0].Key }, "objects/1/key"},
		{"a key of another run", func(m *backup.Manifest) { m.Objects[0].Key = "fleet/web-1/" + m.Chain[0] + "/000001.age" }, "objects/0/key"},
		{"the manifest as an object", func(m *backup.Manifest) { m.Objects[0].Key = "fleet/web-1/" + m.Run + "/manifest.json" }, "objects/0/key"},
		{"an unknown role", func(m *backup.Manifest) { m.Objects[0].Role = "logs" }, "objects/0/role"},
		{"a database segment without its database", func(m *backup.Manifest) { m.Objects[2].Database = "" }, "objects/2/database"},
		{"a database name pg_dump would read as settings", func(m *backup.Manifest) { m.Objects[2].Database = "host=evil" }, "objects/2/database"},
		{"a negative size", func(m *backup.Manifest) { m.Objects[0].Size = -1 }, "objects/0/size"},
		{"an object a reader could not hold", func(m *backup.Manifest) { m.Objects[0].Size = 4 << 30 }, "objects/0/size"},
		{"a digest in capitals", func(m *backup.Manifest) { m.Objects[0].SHA256 = strings.ToUpper(sum) }, "objects/0/sha256"},
		{"a segment missing", func(m *backup.Manifest) { m.Objects[1].Seq = 3 }, "objects/1/seq"},
		{"no index", func(m *backup.Manifest) { m.Objects = m.Objects[:3] }, "objects"},
		{"a dumped database not listed", func(m *backup.Manifest) { m.Databases = nil }, "databases"},
		{"a listed database without segments", func(m *backup.Manifest) { m.Databases = append(m.Databases, backup.Database{Name: "other"}) }, "databases/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := validManifest(t)
			tc.edit(m)
			b, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			_, err = backup.ParseManifest(b)
			testkit.WantCode(t, err, errcode.BackupManifestInvalid)
			if f := errcode.From(err, "").Details[errcode.DetailField]; f != tc.field {
				t.Fatalf("field %v, want %s (%v)", f, tc.field, err)
			}
		})
	}
	for name, doc := range map[string]string{
		"an unknown field": `{"schema": "lexicon/backup-manifest/v1", "extra": 1}`,
		"a repeated key":   `{"schema": "lexicon/backup-manifest/v1", "schema": "lexicon/backup-manifest/v1"}`,
		"not JSON":         `{"schema":`,
		"over the cap":     `"` + strings.Repeat("x", backup.MaxManifestSize) + `"`,
	} {
		if _, err := backup.ParseManifest([]byte(doc)); errcode.Code(err) != errcode.BackupManifestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// validIndex is the index of the incremental run of validManifest.
func validIndex() *backup.Index {
	base, run := "20260903T020000.000Z-1a2b3c4d", "20260904T020000.000Z-0badcafe"
	return &backup.Index{
		Header: backup.IndexHeader{Schema: backup.IndexSchema, Node: "web-1", Run: run, Kind: backup.KindIncremental, Chain: []string{base, run},
			Roots: []string{"/srv/app"}},
		Entries: []backup.Entry{
			{Path: "srv/app", Type: backup.TypeDir, Mode: 0o755, MTimeNS: 1},
			{Path: "srv/app/a.txt", Type: backup.TypeFile, Size: 60, Mode: 0o644, MTimeNS: 2, SHA256: sum, Run: base},
			{Path: "srv/app/b.txt", Type: backup.TypeFile, Size: 60, Mode: 0o600, MTimeNS: 3, SHA256: sum, Run: run},
			{Path: "srv/app/link", Type: backup.TypeSymlink, Mode: 0o777, Target: "a.txt"},
		},
	}
}

func TestIndexRoundTrip(t *testing.T) {
	x := validIndex()
	var b bytes.Buffer
	if _, err := x.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	got, err := backup.ReadIndex(&b)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !reflect.DeepEqual(got, x) || got.Lookup()["srv/app/link"].Target != "a.txt" {
		t.Fatalf("round trip changed the index: %+v", got)
	}
}

// TestIndexRules: an index is refused, naming its line, when an entry could reach outside the run's
// roots or names content no run of the chain holds.
func TestIndexRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(x *backup.Index)
		field string
	}{
		{"a path with ..", func(x *backup.Index) { x.Entries[1].Path = "srv/app/../../etc/passwd" }, "line/3"},
		{"an absolute path", func(x *backup.Index) { x.Entries[1].Path = "/etc/passwd" }, "line/3"},
		{"a path outside the roots", func(x *backup.Index) { x.Entries[1].Path = "etc/passwd" }, "line/3"},
		{"a path twice", func(x *backup.Index) { x.Entries[2].Path = x.Entries[1].Path }, "line/4"},
		{"a file of a run outside the chain", func(x *backup.Index) { x.Entries[1].Run = "20250101T000000.000Z-00000000" }, "line/3"},
		{"a file without its digest", func(x *backup.Index) { x.Entries[1].SHA256 = "" }, "line/3"},
		{"a folder with content", func(x *backup.Index) { x.Entries[0].SHA256 = sum }, "line/2"},
		{"a symlink without a target", func(x *backup.Index) { x.Entries[3].Target = "" }, "line/5"},
		{"a mode beyond 07777", func(x *backup.Index) { x.Entries[1].Mode = 0o170644 }, "line/3"},
		{"an unknown type", func(x *backup.Index) { x.Entries[1].Type = "fifo" }, "line/3"},
		{"the root / itself", func(x *backup.Index) { x.Header.Roots = []string{"/"} }, "roots/0"},
		{"another schema", func(x *backup.Index) { x.Header.Schema = "x" }, "schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := validIndex()
			tc.edit(x)
			var b bytes.Buffer
			if _, err := x.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			_, err := backup.ReadIndex(&b)
			testkit.WantCode(t, err, errcode.BackupManifestInvalid)
			if f := errcode.From(err, "").Details[errcode.DetailField]; f != tc.field {
				t.Fatalf("field %v, want %s (%v)", f, tc.field, err)
			}
		})
	}
	for name, doc := range map[string]string{
		"empty":               "",
		"an unknown field":    `{"schema": "lexicon/backup-index/v1", "more": true}` + "\n",
		"a line over the cap": validHeaderLine() + `{"path": "` + strings.Repeat("a", backup.MaxIndexLine) + `"}` + "\n",
	} {
		if _, err := backup.ReadIndex(strings.NewReader(doc)); errcode.Code(err) != errcode.BackupManifestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func validHeaderLine() string {
	var b bytes.Buffer
	x := validIndex()
	x.Entries = nil
	_, _ = x.WriteTo(&b)
	return b.String()
}

func TestRunIDs(t *testing.T) {
	now := time.Date(2026, 9, 3, 2, 0, 0, 0, time.UTC)
	a := backup.NewRunID(now, "")
	if !backup.ValidRunID(a) || !strings.HasPrefix(a, "20260903T020000.000Z-") {
		t.Fatalf("run id %q", a)
	}
	// A clock that stands still or goes back still makes a later run.
	b := backup.NewRunID(now.Add(-time.Hour), a)
	if b <= a || !backup.ValidRunID(b) {
		t.Fatalf("%q is not after %q", b, a)
	}
	for _, bad := range []string{"", "20260903T020000Z-1a2b3c4d", "20260903T020000.000Z-1A2B3C4D", "20261303T020000.000Z-1a2b3c4d", "20260903T020000.000Z-1a2b3c4"} {
		if backup.ValidRunID(bad) {
			t.Errorf("%q passes as a run id", bad)
		}
	}
	run, manifest, ok := backup.RunOfKey("fleet/web-1/", backup.ManifestKey("fleet", "web-1", a))
	if !ok || !manifest || run != a {
		t.Fatalf("RunOfKey of a manifest: %q %v %v", run, manifest, ok)
	}
	if _, _, ok := backup.RunOfKey("fleet/web-1/", "fleet/web-1/"+a+"/sub/x"); ok {
		t.Fatal("a key in a sub-folder of a run is not the run's")
	}
}

func TestChainOf(t *testing.T) {
	full := validManifest(t)
	full.Kind, full.Run, full.Chain = backup.KindFull, full.Chain[0], full.Chain[:1]
	inc := validManifest(t)
	got, err := backup.ChainOf(map[string]*backup.Manifest{full.Run: full, inc.Run: inc}, inc.Run)
	if err != nil || len(got) != 2 || got[0] != full || got[1] != inc {
		t.Fatalf("chain: %v %v", got, err)
	}
	_, err = backup.ChainOf(map[string]*backup.Manifest{inc.Run: inc}, inc.Run)
	testkit.WantCode(t, err, errcode.BackupObjectMissing)
}

// TestNodeKey: the node's key is made once, private, and read back; a key others can read is refused;
// without it verify and restore say the node cannot decrypt.
func TestNodeKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backup")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "node.key")
	_, err := backup.NodeKey(path, false, time.Now())
	testkit.WantCode(t, err, errcode.BackupNodeKeyMissing)
	a, err := backup.NodeKey(path, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := backup.NodeKey(path, true, time.Now())
	if err != nil || b.String() != a.String() {
		t.Fatalf("the key changed: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o", fi.Mode().Perm())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = backup.NodeKey(path, true, time.Now())
	testkit.WantCode(t, err, errcode.KeyFileUntrusted)
	for name, text := range map[string]string{"no key": "# only a comment\n", "two keys": a.String() + "\n" + a.String() + "\n", "garbage": "AGE-SECRET-KEY-1XYZ\n"} {
		_, err := backup.ParseIdentity([]byte(text))
		if errcode.Code(err) != errcode.KeyMalformed || strings.Contains(errcode.From(err, "").Error(), "XYZ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPolicy: a node's backup section holds only absolute folders and plain database names, and
// allows exactly what it names.
func TestPolicy(t *testing.T) {
	p := &backup.Policy{Paths: []string{"/srv/app"}, RestorePaths: []string{"/srv/restore"}, Databases: []string{"app"},
		Postgres: &backup.Postgres{Bin: "/usr/lib/postgresql/15/bin", Host: "127.0.0.1", User: "postgres"}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !p.AllowsPath("/srv/app/data") || p.AllowsPath("/srv/application") || p.AllowsPath("/srv/app/../etc") || !p.AllowsRestore("/srv/restore/x") ||
		p.AllowsRestore("/srv/app") || !p.AllowsDatabase("app") || p.AllowsDatabase("postgres") {
		t.Fatal("the policy allows other than it names")
	}
	for name, bad := range map[string]backup.Policy{
		"a relative path":            {Paths: []string{"srv"}},
		"the whole machine":          {Paths: []string{"/"}},
		"a database like settings":   {Databases: []string{"dbname=x"}, Postgres: p.Postgres},
		"databases without postgres": {Databases: []string{"app"}},
		"a host with a quote":        {Postgres: &backup.Postgres{Bin: "/usr/bin", Host: "x' sslmode=disable"}},
		"a relative program folder":  {Postgres: &backup.Postgres{Bin: "bin"}},
	} {
		if err := bad.Validate(); errcode.Code(err) != errcode.PolicyUntrusted {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Two nodes that verify one database on one server at once must not share a scratch database (one
// drops the other's mid-restore), while one node's next run finds the one its killed run left.
func TestScratchDatabaseIsOneNodes(t *testing.T) {
	a, b := backup.ScratchDatabase("verify", "node_a", "app"), backup.ScratchDatabase("verify", "node_b", "app")
	if a == b {
		t.Fatalf("two nodes share the scratch database %s", a)
	}
	if again := backup.ScratchDatabase("verify", "node_a", "app"); again != a {
		t.Fatalf("one node's scratch database moved: %s then %s", a, again)
	}
	if r := backup.ScratchDatabase("restore", "node_a", "app"); r == a {
		t.Fatalf("a restore and a verify share %s", r)
	}
}
