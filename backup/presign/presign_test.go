package presign_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// Presigning is local: these tests reach no bucket. What a bucket does with the requests (refusing an
// overwrite, a wrong secret, an expired request) is tested against versitygw in backup/archive,
// host/wasm and backup/backupe2e.

func target() presign.Target {
	return presign.Target{Name: "t1", Endpoint: "http://127.0.0.1:7070", Region: "us-east-1", Bucket: "backups", Prefix: "fleet",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
}

func recipient(t *testing.T) string {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient().String()
}

// TestTargetValidate: a target that cannot be signed for is refused before anything is presigned, and
// the error names the field.
func TestTargetValidate(t *testing.T) {
	if err := target().Validate(); err != nil {
		t.Fatal(err)
	}
	for field, edit := range map[string]func(*presign.Target){
		"endpoint":    func(tg *presign.Target) { tg.Endpoint = "ftp://host" },
		"region":      func(tg *presign.Target) { tg.Region = "" },
		"bucket":      func(tg *presign.Target) { tg.Bucket = "a/b" },
		"prefix":      func(tg *presign.Target) { tg.Prefix = "a//b" },
		"credentials": func(tg *presign.Target) { tg.SecretAccessKey = "" },
	} {
		tg := target()
		edit(&tg)
		_, err := presign.New(tg)
		testkit.WantCode(t, err, errcode.UsageInvalid)
		if got := errcode.From(err, "").Details[errcode.DetailField]; got != field {
			t.Errorf("%s: field %v", field, got)
		}
	}
}

// TestWriteGrant: a write grant holds fresh PUTs under the run's own folder, each signed with
// If-None-Match: * (so the bucket refuses to replace a key), the manifest last, all expiring together.
func TestWriteGrant(t *testing.T) {
	s, err := presign.New(target())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	rcpt := recipient(t)
	g, err := s.WriteGrant(context.Background(), presign.WriteRequest{Node: "web-1", Recipients: []string{rcpt}, Objects: 3, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !backup.ValidRunID(g.Run) || g.Parent != "" || g.Node != "web-1" || g.Target != "t1" || !g.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("grant %+v", g)
	}
	if g.Prefix != backup.RunPrefix("fleet", "web-1", g.Run) || !strings.HasPrefix(g.Prefix, "fleet/web-1/") {
		t.Fatalf("prefix %q", g.Prefix)
	}
	if len(g.Recipients) != 1 || g.Recipients[0] != rcpt || len(g.Objects) != 3 || g.Manifest == nil {
		t.Fatalf("grant %+v", g)
	}
	for i, p := range append(g.Objects, *g.Manifest) {
		want := backup.ObjectKey("fleet", "web-1", g.Run, i+1)
		if i == 3 {
			want = backup.ManifestKey("fleet", "web-1", g.Run)
		}
		if p.Key != want || p.Method != http.MethodPut {
			t.Fatalf("request %d: %s %s, want PUT %s", i, p.Method, p.Key, want)
		}
		if got := header(p.Header, "If-None-Match"); got != "*" {
			t.Fatalf("request %d: If-None-Match %q: a holder could replace the key", i, got)
		}
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Path != "/backups/"+want || q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Expires") != "3600" ||
			!strings.Contains(q.Get("X-Amz-SignedHeaders"), "if-none-match") {
			t.Fatalf("request %d: %s", i, p.URL)
		}
	}

	// An incremental names its parent, and its run id sorts after it.
	g2, err := s.WriteGrant(context.Background(), presign.WriteRequest{Node: "web-1", Parent: g.Run, Recipients: []string{rcpt}, Objects: 2, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Parent != g.Run || g2.Run <= g.Run {
		t.Fatalf("incremental %s on %s", g2.Run, g2.Parent)
	}

	for name, r := range map[string]presign.WriteRequest{
		"a node id that is not one":     {Node: "../web-2", Recipients: []string{rcpt}, Objects: 2},
		"fewer than two objects":        {Node: "web-1", Recipients: []string{rcpt}, Objects: 1},
		"more objects than a run holds": {Node: "web-1", Recipients: []string{rcpt}, Objects: backup.MaxObjects + 1},
		"a parent that is not a run id": {Node: "web-1", Parent: "yesterday", Recipients: []string{rcpt}, Objects: 2},
	} {
		_, err := s.WriteGrant(context.Background(), r)
		if !errcode.Has(err, errcode.UsageInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = s.WriteGrant(context.Background(), presign.WriteRequest{Node: "web-1", Recipients: []string{"ssh-ed25519 AAAA"}, Objects: 2})
	testkit.WantCode(t, err, errcode.BackupGrantInvalid)
}

// TestReadGrant: a read grant holds GETs of a chain's manifests and of exactly the objects they name;
// a manifest naming a key outside its own run's folder (the node's word, read from the bucket) is
// refused before anything is signed, so a node cannot have the plane open another node's objects.
func TestReadGrant(t *testing.T) {
	s, err := presign.New(target())
	if err != nil {
		t.Fatal(err)
	}
	full := backup.NewRunID(time.Now().Add(-time.Hour), "")
	inc := backup.NewRunID(time.Now(), full)
	chain := []*backup.Manifest{
		{Run: full, Objects: []backup.Object{{Key: backup.ObjectKey("fleet", "web-1", full, 1)}, {Key: backup.ObjectKey("fleet", "web-1", full, 2)}}},
		{Run: inc, Objects: []backup.Object{{Key: backup.ObjectKey("fleet", "web-1", inc, 1)}}},
	}
	g, err := s.ReadGrant(context.Background(), "web-1", chain, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if g.Prefix != backup.NodePrefix("fleet", "web-1") || len(g.Runs) != 2 || g.Run != "" || g.Manifest != nil || len(g.Objects) != 0 {
		t.Fatalf("grant %+v", g)
	}
	for i, r := range g.Runs {
		if r.Run != chain[i].Run || r.Manifest.Key != backup.ManifestKey("fleet", "web-1", r.Run) || r.Manifest.Method != http.MethodGet ||
			len(r.Objects) != len(chain[i].Objects) {
			t.Fatalf("run %d: %+v", i, r)
		}
		for j, o := range r.Objects {
			if o.Key != chain[i].Objects[j].Key || o.Method != http.MethodGet || !strings.Contains(o.URL, "X-Amz-Signature=") {
				t.Fatalf("run %d object %d: %+v", i, j, o)
			}
		}
	}

	for name, key := range map[string]string{
		"another node's object":  backup.ObjectKey("fleet", "web-2", inc, 1),
		"another run's object":   backup.ObjectKey("fleet", "web-1", full, 3),
		"a key below its folder": backup.RunPrefix("fleet", "web-1", inc) + "x/000001.age",
	} {
		bad := []*backup.Manifest{chain[0], {Run: inc, Objects: []backup.Object{{Key: key}}}}
		_, err := s.ReadGrant(context.Background(), "web-1", bad, time.Minute)
		if !errcode.Has(err, errcode.BackupManifestInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.ReadGrant(context.Background(), "web-1", nil, time.Minute); !errcode.Has(err, errcode.UsageInvalid) {
		t.Errorf("an empty chain: %v", err)
	}
}

func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
