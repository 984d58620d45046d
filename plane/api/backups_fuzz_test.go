package api_test

import (
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// FuzzBackupPolicyBody: a policy body never panics its decoder; one without "enabled" is refused (an
// empty body must not read as a recorded off); one it accepts encodes to a body it accepts again,
// the same on the way round.
func FuzzBackupPolicyBody(f *testing.F) {
	f.Add([]byte(`{"enabled": true, "target": "main", "every": "24h", "keep_days": 14, "paths": ["/srv"], "databases": ["app"]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"enabled": false, "unknown": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p api.BackupPolicy
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) != nil || fields["enabled"] == nil {
			t.Fatalf("accepted a body that does not say enabled: %s", data)
		}
		again, _ := json.Marshal(p)
		var p2 api.BackupPolicy
		err := json.Unmarshal(again, &p2)
		third, _ := json.Marshal(p2)
		if err != nil || string(third) != string(again) {
			t.Fatalf("%s became %s (%v)", again, third, err)
		}
	})
}
