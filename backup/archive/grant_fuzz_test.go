package archive

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzGrant: a grant as the agent reads it from a job (JSON) never panics the checks of either kind;
// a refusal is backup.grant_invalid or backup.grant_missing; a write grant they accept PUTs only fresh
// keys directly under the run's own folder, and a read grant GETs only keys under the node's folder,
// runs in order.
func FuzzGrant(f *testing.F) {
	now := time.Unix(1700000000, 0)
	node, run := "node_01hzzzzzzzzzzzzzzzzzzzzzzz", backup.NewRunID(now, "")
	prefix := backup.RunPrefix("fleet", node, run)
	w := channel.BackupGrant{Node: node, Prefix: prefix, Run: run, Expires: now.Add(time.Hour),
		Objects:  []channel.Presigned{{Key: prefix + "000001.age", Method: "PUT"}, {Key: prefix + "000002.age", Method: "PUT"}},
		Manifest: &channel.Presigned{Key: prefix + backup.ManifestName, Method: "PUT"}}
	r := channel.BackupGrant{Node: node, Prefix: backup.NodePrefix("fleet", node), Expires: now.Add(time.Hour),
		Runs: []channel.GrantRun{{Run: run, Manifest: channel.Presigned{Key: prefix + backup.ManifestName, Method: "GET"},
			Objects: []channel.Presigned{{Key: prefix + "000001.age", Method: "GET"}}}}}
	for _, g := range []channel.BackupGrant{w, r} {
		b, _ := json.Marshal(g)
		f.Add(b)
	}
	f.Add([]byte(`{"node": "n", "prefix": "../", "runs": [{"run": "x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var g channel.BackupGrant
		if json.Unmarshal(data, &g) != nil {
			return
		}
		refused := func(err error) bool {
			if err == nil {
				return false
			}
			if !errcode.Has(err, errcode.BackupGrantInvalid) && !errcode.Has(err, errcode.BackupGrantMissing) {
				t.Fatalf("refused with %v", err)
			}
			return true
		}
		if !refused(checkWriteGrant(&g, now)) {
			for _, o := range append(g.Objects, *g.Manifest) {
				name, ok := strings.CutPrefix(o.Key, g.Prefix)
				if !ok || name == "" || strings.Contains(name, "/") || o.Method != http.MethodPut || !strings.HasSuffix(g.Prefix, g.Node+"/"+g.Run+"/") {
					t.Fatalf("accepted a write of %s %q under %q", o.Method, o.Key, g.Prefix)
				}
			}
		}
		if !refused(checkReadGrant(&g, now)) {
			for i, gr := range g.Runs {
				if i > 0 && gr.Run <= g.Runs[i-1].Run {
					t.Fatal("accepted runs out of order")
				}
				for _, o := range append(gr.Objects, gr.Manifest) {
					name, ok := strings.CutPrefix(o.Key, g.Prefix+gr.Run+"/")
					if !ok || name == "" || strings.Contains(name, "/") || o.Method != http.MethodGet {
						t.Fatalf("accepted a read of %s %q", o.Method, o.Key)
					}
				}
			}
		}
	})
}
