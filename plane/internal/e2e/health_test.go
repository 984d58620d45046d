package e2e_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestReplicaStoppedIsMissing runs two plane processes on one PostgreSQL, heartbeating every 200 ms: both
// are listed by `lexicon plane status`; one is killed, and the other raises plane:replica_missing naming
// it once its lease has run out; forgetting it clears the incident.
func TestReplicaStoppedIsMissing(t *testing.T) {
	f := newFleet(t, "postgres", fleetOptions{serveArgs: []string{"--heartbeat-every", "200ms", "--reconcile-every", "200ms"}})
	g := f.replica()
	u, err := url.Parse(g.url)
	must(t, err)
	gone := u.Host // the default replica id: the address it listens on

	status := f.lexicon(false, "plane", "status")
	reps := status["replicas"].([]any)
	if len(reps) != 2 {
		t.Fatalf("plane status: %v", status)
	}
	for _, r := range reps {
		r := r.(map[string]any)
		if r["missing"] != false || len(r["services"].([]any)) == 0 || r["peak_rss_bytes"].(float64) <= 0 {
			t.Fatalf("replica %v", r)
		}
	}

	g.plane.kill()
	f.planeLog.WaitFor(t, `"source":"plane:replica_missing","subject":"`+gone+`"`)
	list := f.lexicon(false, "incidents", "list", "--condition", "open")
	id := ""
	for _, i := range list["incidents"].([]any) {
		i := i.(map[string]any)
		if i["source"] == "plane:replica_missing" && i["subject"] == gone {
			id = i["id"].(string)
		}
	}
	if id == "" {
		t.Fatalf("no open plane:replica_missing for %s: %v", gone, list)
	}
	status = f.lexicon(false, "plane", "status")
	missing := 0
	for _, r := range status["replicas"].([]any) {
		if r.(map[string]any)["missing"] == true {
			missing++
		}
	}
	if missing != 1 {
		t.Fatalf("plane status after the kill: %v", status)
	}

	forgotten := f.lexicon(false, "plane", "forget-replica", gone)
	if forgotten["id"] != gone {
		t.Fatalf("forget: %v", forgotten)
	}
	f.planeLog.WaitFor(t, `"msg":"incident cleared","incident":"`+id+`"`)
	if !strings.Contains(f.planeLog.String(), `"msg":"replica forgotten"`) {
		t.Fatal("the forget was not logged")
	}
}
