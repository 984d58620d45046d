package storetest

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const testLog = "log.lexicon.test"

// root is a made-up root hash, distinct per name.
func root(name string) string {
	h := sha256.Sum256([]byte(name))
	return base64.StdEncoding.EncodeToString(h[:])
}

func cp(origin string, size int64, rootName string) store.NodeCheckpoint {
	return store.NodeCheckpoint{Origin: origin, Size: size, RootHash: root(rootName)}
}

// holds records that n holds cps, as its report at d says.
func (f *fx) holds(n store.Node, d time.Duration, cps ...store.NodeCheckpoint) {
	f.Helper()
	_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(d), Vocabulary: n.Vocabulary, Idle: true, Checkpoints: cps})
	noErr(f, err, "NodeReport")
}

func (f *fx) checkpoints(nodeID string) []store.NodeCheckpoint {
	f.Helper()
	list, err := f.s.NodeCheckpointList(f.ctx, store.NodeCheckpointListParams{NodeID: nodeID})
	noErr(f, err, "NodeCheckpointList")
	return list
}

func (f *fx) verdict(d time.Duration, old, new store.NodeCheckpoint, consistent bool) {
	f.Helper()
	noErr(f, f.s.LogConsistencyRecord(f.ctx, store.LogConsistencyRecordParams{Now: f.at(d), Verdict: store.LogConsistency{
		Origin: old.Origin, Old: store.LogTree{Size: old.Size, RootHash: old.RootHash}, New: store.LogTree{Size: new.Size, RootHash: new.RootHash},
		Consistent: consistent, Detail: "proof checked"}}), "LogConsistencyRecord")
}

// splitNodes lists the nodes of the changes, sorted.
func splitNodes(changes []store.IncidentChange, kind store.EventKind) []string {
	out := []string{}
	for _, c := range changes {
		if c.Incident.Source == store.DetectorLogSplitView && c.Event.Kind == kind {
			out = append(out, c.Incident.NodeName)
		}
	}
	sort.Strings(out)
	return out
}

var logViewTests = []test{
	{"LogView/ReportReplacesCheckpoints", func(f *fx) {
		n := f.node("web-1")
		f.holds(n, time.Minute, cp(testLog, 5, "a5"), cp("other.log", 2, "o2"))
		got := f.checkpoints(n.ID)
		if len(got) != 2 || got[0].Origin != testLog || got[0].Size != 5 || got[0].RootHash != root("a5") || got[0].NodeName != "web-1" ||
			got[0].NodeID != n.ID || !got[0].ReportedAt.Equal(f.at(time.Minute)) || got[1].Origin != "other.log" {
			f.Fatalf("checkpoints %+v", got)
		}
		f.holds(n, 2*time.Minute, cp(testLog, 9, "a9"))
		if got := f.checkpoints(n.ID); len(got) != 1 || got[0].Size != 9 {
			f.Fatalf("after the second report %+v", got)
		}
		all, err := f.s.NodeCheckpointList(f.ctx, store.NodeCheckpointListParams{})
		noErr(f, err, "NodeCheckpointList")
		same(f, "every node's", len(all), 1)

		for name, bad := range map[string][]store.NodeCheckpoint{
			"short root":     {{Origin: testLog, Size: 1, RootHash: "AAAA"}},
			"no origin":      {{Size: 1, RootHash: root("x")}},
			"origin spaced":  {{Origin: "a log", Size: 1, RootHash: root("x")}},
			"size zero":      {{Origin: testLog, RootHash: root("x")}},
			"log twice":      {cp(testLog, 1, "x"), cp(testLog, 2, "y")},
			"root unpadded":  {{Origin: testLog, Size: 1, RootHash: strings.TrimRight(root("x"), "=")}},
			"too many":       make([]store.NodeCheckpoint, store.MaxNodeCheckpoints+1),
			"root not b64":   {{Origin: testLog, Size: 1, RootHash: strings.Repeat("!", 44)}},
			"origin non-txt": {{Origin: "log\x00", Size: 1, RootHash: root("x")}},
		} {
			_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(3 * time.Minute), Checkpoints: bad})
			if !testkit.CheckCode(f, err, errcode.StoreParamInvalid, name) {
				continue
			}
		}
		if got := f.checkpoints(n.ID); len(got) != 1 || got[0].Size != 9 {
			f.Fatalf("a refused report changed the checkpoints: %+v", got)
		}
		f.holds(n, 4*time.Minute)
		same(f, "cleared", len(f.checkpoints(n.ID)), 0)
	}},
	{"LogView/EndedNodeKeepsItsOwnButIsNotCompared", func(f *fx) {
		a, b := f.node("web-1"), f.node("web-2")
		f.holds(a, time.Minute, cp(testLog, 5, "a5"))
		f.holds(b, time.Minute, cp(testLog, 5, "b5"))
		same(f, "split", splitNodes(f.reconcile(time.Minute, nil), store.EventOpened), []string{"web-1", "web-2"})
		_, err := f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: b.ID, By: "admin", Now: f.at(2 * time.Minute)})
		noErr(f, err, "NodeDisconnect")
		// web-1 is contradicted by no active node now, and web-2 ended: both clear.
		same(f, "one of the two is gone", splitNodes(f.reconcile(3*time.Minute, nil), store.EventCleared), []string{"web-1", "web-2"})
		if got := f.checkpoints(b.ID); len(got) != 1 {
			f.Fatalf("the ended node's own list: %+v", got)
		}
		all, err := f.s.NodeCheckpointList(f.ctx, store.NodeCheckpointListParams{})
		noErr(f, err, "NodeCheckpointList")
		same(f, "active nodes'", len(all), 1)
		_, err = f.s.NodeReport(f.ctx, store.NodeReportParams{ID: b.ID, Now: f.at(4 * time.Minute), Checkpoints: []store.NodeCheckpoint{cp(testLog, 5, "b5")}})
		testkit.WantCode(f, err, errcode.NodeNotActive)
	}},
	{"Incident/LogSplitView", func(f *fx) {
		a, b, c := f.node("web-1"), f.node("web-2"), f.node("web-3")
		// One history for all: nothing to flag.
		for _, n := range []store.Node{a, b, c} {
			f.holds(n, time.Minute, cp(testLog, 5, "h5"), cp("other.log", 3, "o3"))
		}
		same(f, "one view", splitNodes(f.reconcile(time.Minute, hooks), store.EventOpened), []string{})

		// web-2 is shown another root for size 5: every node is contradicted by another.
		f.holds(b, 2*time.Minute, cp(testLog, 5, "fork5"), cp("other.log", 3, "o3"))
		ch := f.reconcile(2*time.Minute, hooks)
		same(f, "same size, two roots", splitNodes(ch, store.EventOpened), []string{"web-1", "web-2", "web-3"})
		for _, x := range ch {
			if x.Incident.NodeName == "web-2" && (x.Incident.Severity != store.SeverityCritical ||
				!strings.Contains(x.Incident.Summary, "web-1") || !strings.Contains(x.Incident.Summary, root("fork5")) ||
				!strings.Contains(x.Incident.Summary, testLog)) {
				f.Fatalf("incident %+v", x.Incident)
			}
		}
		same(f, "nothing new", splitNodes(f.reconcile(3*time.Minute, hooks), store.EventOpened), []string{})

		// web-2 comes back to the history the others hold, further on; no verdict on 5..8 yet.
		f.holds(b, 4*time.Minute, cp(testLog, 8, "h8"))
		same(f, "rejoined", splitNodes(f.reconcile(4*time.Minute, hooks), store.EventCleared), []string{"web-1", "web-2", "web-3"})

		// The plane records that the log did not prove 5 a prefix of 8: a split between sizes.
		f.verdict(5*time.Minute, cp(testLog, 5, "h5"), cp(testLog, 8, "h8"), false)
		same(f, "sizes not one history", splitNodes(f.reconcile(5*time.Minute, hooks), store.EventReopened), []string{"web-1", "web-2", "web-3"})
		list, err := f.s.LogConsistencyList(f.ctx, store.LogConsistencyListParams{})
		noErr(f, err, "LogConsistencyList")
		if len(list) != 1 || list[0].Consistent || list[0].Old.Size != 5 || list[0].New.RootHash != root("h8") || !list[0].CheckedAt.Equal(f.at(5*time.Minute)) {
			f.Fatalf("verdicts %+v", list)
		}
		// Recorded again as proven (the same pair), the incidents clear.
		f.verdict(6*time.Minute, cp(testLog, 5, "h5"), cp(testLog, 8, "h8"), true)
		same(f, "proven", splitNodes(f.reconcile(6*time.Minute, hooks), store.EventCleared), []string{"web-1", "web-2", "web-3"})

		// Once no node holds either side, the verdict is forgotten on the next record.
		for _, n := range []store.Node{a, b, c} {
			f.holds(n, 7*time.Minute, cp(testLog, 9, "h9"))
		}
		f.verdict(8*time.Minute, cp(testLog, 8, "x8"), cp(testLog, 9, "h9"), true)
		list, err = f.s.LogConsistencyList(f.ctx, store.LogConsistencyListParams{})
		noErr(f, err, "LogConsistencyList")
		if len(list) != 1 || list[0].Old.RootHash != root("x8") {
			f.Fatalf("verdicts after pruning %+v", list)
		}

		for name, v := range map[string]store.LogConsistency{
			"old not smaller": {Origin: testLog, Old: store.LogTree{Size: 9, RootHash: root("a")}, New: store.LogTree{Size: 9, RootHash: root("b")}},
			"bad root":        {Origin: testLog, Old: store.LogTree{Size: 1, RootHash: "x"}, New: store.LogTree{Size: 9, RootHash: root("b")}},
			"no origin":       {Old: store.LogTree{Size: 1, RootHash: root("a")}, New: store.LogTree{Size: 9, RootHash: root("b")}},
			"detail":          {Origin: testLog, Old: store.LogTree{Size: 1, RootHash: root("a")}, New: store.LogTree{Size: 9, RootHash: root("b")}, Detail: "\x00"},
		} {
			testkit.CheckCode(f, f.s.LogConsistencyRecord(f.ctx, store.LogConsistencyRecordParams{Verdict: v}), errcode.StoreParamInvalid, name)
		}
	}},
}
