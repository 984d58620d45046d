package storetest

import (
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func init() { nodeTests = append(nodeTests, nodeCountTests...) }

var nodeCountTests = []test{
	// Node/Count counts what listing every node would: by state, active nodes by liveness, trust,
	// floor and agent version.
	{"Node/Count", func(f *fx) {
		empty, err := f.s.NodeCount(f.ctx, store.NodeCountParams{SilentBefore: f.at(0)})
		noErr(f, err, "NodeCount of no node")
		if empty.Total != 0 || empty.Versions == nil || len(empty.Versions) != 0 {
			f.Fatalf("no node: %+v", empty)
		}
		online := f.node("web-1", "w")
		report := func(n store.Node, at time.Duration, version, untrusted, floor string) {
			f.Helper()
			_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(at), AgentVersion: version, Vocabulary: words("w"), Idle: true,
				Untrusted: untrusted, Update: store.NodeUpdate{State: "pending", NeedsNewerAgent: floor}})
			noErr(f, err, "NodeReport")
		}
		report(online, 10*time.Minute, "1.1.0", "", "")
		report(f.node("web-2"), 10*time.Minute, "1.1.0", "the statement's signature does not verify", "")
		report(f.node("web-3"), 10*time.Minute, "1.0.0", "", "1.1.0")
		f.node("web-4") // seen at 0 only: silent at the cutoff below
		gone := f.node("web-5")
		_, err = f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: gone.ID, By: "admin", Now: f.at(time.Minute)})
		noErr(f, err, "NodeDisconnect")

		c, err := f.s.NodeCount(f.ctx, store.NodeCountParams{SilentBefore: f.at(5 * time.Minute)})
		noErr(f, err, "NodeCount")
		want := store.NodeCounts{Total: 5, Active: 4, Disconnected: 1, Online: 3, Silent: 1, Untrusted: 1, BelowFloor: 1,
			Versions: []store.VersionCount{{Version: "1.0.0", Nodes: 2}, {Version: "1.1.0", Nodes: 2}}}
		same(f, "counts", c, want)

		// The counts agree with listing every node.
		list, err := f.s.NodeList(f.ctx, store.NodeListParams{Limit: store.MaxListLimit})
		noErr(f, err, "NodeList")
		var active, untrusted, below int
		for _, n := range list.Nodes {
			if n.State == store.NodeActive {
				active++
				if n.Untrusted != "" {
					untrusted++
				}
				if n.Update.NeedsNewerAgent != "" {
					below++
				}
			}
		}
		if len(list.Nodes) != c.Total || active != c.Active || untrusted != c.Untrusted || below != c.BelowFloor {
			f.Fatalf("listing says %d nodes, %d active, %d untrusted, %d below floor; counting %+v", len(list.Nodes), active, untrusted, below, c)
		}
	}},
	// Node/ListFiltered narrows the list by a label, a word and an agent version, pages within the
	// filter, and refuses a filter no node could match by its rules.
	{"Node/ListFiltered", func(f *fx) {
		a := f.node("web-1", "disk_usage", "uptime")
		b := f.node("web-2", "uptime")
		c := f.node("db-1", "disk_usage")
		_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: c.ID, Now: f.at(time.Minute), AgentVersion: "2.0.0", Vocabulary: words("disk_usage"), Idle: true})
		noErr(f, err, "NodeReport")
		for _, n := range []store.Node{a, b} {
			_, err := f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: n.ID, Set: map[string]string{"role": "web", "zone.io/rack": "r1"}, By: "op", Now: f.at(0)})
			noErr(f, err, "NodeLabel")
		}
		ids := func(filter store.NodeFilter, limit int, cursor string) ([]string, string) {
			f.Helper()
			res, err := f.s.NodeList(f.ctx, store.NodeListParams{Filter: filter, Limit: limit, Cursor: cursor})
			noErr(f, err, "NodeList filtered")
			var out []string
			for _, n := range res.Nodes {
				out = append(out, n.Name)
			}
			return out, res.NextCursor
		}
		for _, tc := range []struct {
			filter store.NodeFilter
			want   []string
		}{
			{store.NodeFilter{LabelKey: "role", LabelValue: "web"}, []string{"web-1", "web-2"}},
			{store.NodeFilter{LabelKey: "zone.io/rack", LabelValue: "r1"}, []string{"web-1", "web-2"}},
			{store.NodeFilter{LabelKey: "role", LabelValue: "db"}, nil},
			{store.NodeFilter{Word: "disk_usage"}, []string{"web-1", "db-1"}},
			{store.NodeFilter{Word: "disk"}, nil},
			{store.NodeFilter{AgentVersion: "2.0.0"}, []string{"db-1"}},
			{store.NodeFilter{LabelKey: "role", LabelValue: "web", Word: "disk_usage", AgentVersion: "1.0.0"}, []string{"web-1"}},
		} {
			got, _ := ids(tc.filter, 0, "")
			if !sameSet(got, tc.want) {
				f.Errorf("filter %+v: %v, want %v", tc.filter, got, tc.want)
			}
		}
		first, next := ids(store.NodeFilter{Word: "uptime"}, 1, "")
		second, last := ids(store.NodeFilter{Word: "uptime"}, 1, next)
		if len(first) != 1 || len(second) != 1 || first[0] == second[0] || last != "" && func() bool { rest, _ := ids(store.NodeFilter{Word: "uptime"}, 1, last); return len(rest) != 0 }() {
			f.Fatalf("paging a filter: %v %v (next %q)", first, second, last)
		}
		for _, bad := range []store.NodeFilter{{LabelKey: "role"}, {LabelValue: "web"}, {LabelKey: "Role", LabelValue: "web"}, {LabelKey: "role", LabelValue: "a=b"}, {Word: "a\x00b"}} {
			_, err := f.s.NodeList(f.ctx, store.NodeListParams{Filter: bad})
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
	}},
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
