package backup_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lexicon-fleet/lexicon/backup"
)

// FuzzParseManifest: a manifest read from a bucket never panics the parser, and one it accepts encodes
// to a manifest it accepts again, unchanged.
func FuzzParseManifest(f *testing.F) {
	b, _ := validManifest(f).Marshal()
	f.Add(b)
	f.Add([]byte(`{"schema": "lexicon/backup-manifest/v1"}`))
	f.Add([]byte(`{"schema": "lexicon/backup-manifest/v1", "objects": [{"key": "../x", "role": "files"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := backup.ParseManifest(data)
		if err != nil {
			return
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatalf("an accepted manifest does not encode: %v", err)
		}
		m2, err := backup.ParseManifest(again)
		if err != nil {
			t.Fatalf("an accepted manifest, encoded again, is refused: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("the manifest changed on its way round")
		}
	})
}

// FuzzReadIndex: an index read from a bucket never panics the reader, every entry it accepts lies
// beneath a root of its run by a clean relative path, and it writes out to an index it reads again.
func FuzzReadIndex(f *testing.F) {
	var b bytes.Buffer
	_, _ = validIndex().WriteTo(&b)
	f.Add(b.Bytes())
	f.Add([]byte(validHeaderLine() + `{"path": "srv/app/../../etc", "type": "dir", "mode": 0, "uid": 0, "gid": 0, "mtime_ns": 0}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := backup.ReadIndex(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, e := range x.Entries {
			if !backup.ValidEntryPath(e.Path) {
				t.Fatalf("accepted an entry at %q", e.Path)
			}
		}
		var out bytes.Buffer
		if _, err := x.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := backup.ReadIndex(&out); err != nil {
			t.Fatalf("an accepted index, written again, is refused: %v", err)
		}
	})
}
