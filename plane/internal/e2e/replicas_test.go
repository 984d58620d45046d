package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
)

// TestTwoPlanesOnePostgres runs two plane processes on one PostgreSQL with 20 agents split between
// them and 1,000 jobs: every job is handed out exactly once.
func TestTwoPlanesOnePostgres(t *testing.T) {
	const agents, jobs = 20, 1000
	f := newFleet(t, "postgres", fleetOptions{})
	g := f.replica()
	var nodes []*agent
	for i := range agents {
		plane := f
		if i%2 == 1 {
			plane = g
		}
		nodes = append(nodes, plane.enrol(fmt.Sprintf("node-%02d", i), acceptLookAndChange))
	}

	// Queue the jobs through both planes' admin APIs at once.
	token, err := os.ReadFile(f.tokenFile)
	must(t, err)
	ids := make(chan string, jobs)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			plane := []*fleet{f, g}[w%2]
			client := planeClient(t, plane.ca)
			for i := w; i < jobs; i += 4 {
				body, _ := json.Marshal(map[string]any{"node": nodes[i%agents].nodeID, "word": "e2e_spin", "params": map[string]string{"attack": "counter"}})
				req, _ := http.NewRequest(http.MethodPost, plane.url+"/api/v1/admin/jobs", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var job struct{ ID string }
				_ = json.NewDecoder(resp.Body).Decode(&job)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("queue job: %s", resp.Status)
					return
				}
				ids <- job.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	if t.Failed() {
		return
	}
	var all, finished []string
	for id := range ids {
		all = append(all, id)
	}
	st, err := open.URL(context.Background(), f.store)
	must(t, err)
	defer st.Close()
	// Every job finished: whichever replica stored its result logged it, in the log both share.
	for _, id := range all {
		f.planeLog.WaitFor(t, jobLogged("job finished", id))
		j, err := st.JobGet(context.Background(), store.JobGetParams{ID: id})
		must(t, err)
		if j.State != store.JobCompleted {
			t.Fatalf("job %s ended %s: %s %s", j.ID, j.State, j.OutcomeCode, j.OutcomeMessage)
		}
		finished = append(finished, id)
	}
	all = finished
	// Each job was started exactly once, on the node it was queued for, across every agent's log.
	started := map[string]int{}
	for _, a := range nodes {
		for _, line := range strings.Split(a.p.log(), "\n") {
			var ev struct{ Msg, Job string }
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Msg == "job started" {
				started[ev.Job]++
			}
		}
	}
	for _, id := range all {
		if started[id] != 1 {
			t.Fatalf("job %s started %d times", id, started[id])
		}
	}
	if len(started) != jobs {
		t.Fatalf("%d jobs started, want %d", len(started), jobs)
	}
}

// replica starts a second plane process on the fleet's store, with its own data folder.
func (f *fleet) replica() *fleet {
	g := *f
	g.planeData = filepath.Join(f.dir, "plane-2")
	run(f.t, false, "lexicon-release", "trust", "init", "--out", filepath.Join(g.planeData, "trust"), "--key", f.pubFile)
	g.startPlane("")
	return &g
}
