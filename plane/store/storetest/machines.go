package storetest

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var machineTests = []test{
	// Machine/PutConfirmRemove: adding and editing confirm the machine at that time; a taken name, an
	// unknown id and oversized text are refused with nothing changed; remove deletes it once.
	{"Machine/PutConfirmRemove", func(f *fx) {
		retire := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
		a, err := f.s.MachinePut(f.ctx, store.MachinePutParams{Name: "backup-nas", Purpose: "nightly backups", Owner: "ops",
			OSRelease: "debian 11", RetireBy: retire, By: "alice", Now: f.at(0)})
		noErr(f, err, "MachinePut")
		if a.ID == "" || !a.ConfirmedAt.Equal(f.at(0)) || a.ConfirmedBy != "alice" || !a.RetireBy.Equal(retire) || a.CreatedBy != "alice" {
			f.Fatalf("added %+v", a)
		}
		b, err := f.s.MachinePut(f.ctx, store.MachinePutParams{Name: "alpha", Purpose: "build box", Owner: "dev", OSRelease: "ubuntu 22.04", By: "bob", Now: f.at(time.Minute)})
		noErr(f, err, "MachinePut")
		if !b.RetireBy.IsZero() {
			f.Fatalf("no retire-by set: %+v", b)
		}
		_, err = f.s.MachinePut(f.ctx, store.MachinePutParams{Name: "alpha", Purpose: "x", Owner: "y", OSRelease: "debian 12", By: "bob"})
		testkit.WantCode(f, err, errcode.MachineNameTaken)
		_, err = f.s.MachinePut(f.ctx, store.MachinePutParams{ID: a.ID, Name: "alpha", Purpose: "x", Owner: "y", OSRelease: "debian 12", By: "bob"})
		testkit.WantCode(f, err, errcode.MachineNameTaken)
		_, err = f.s.MachinePut(f.ctx, store.MachinePutParams{ID: "mach_missing", Name: "gamma", By: "bob"})
		testkit.WantCode(f, err, errcode.MachineNotFound)
		_, err = f.s.MachinePut(f.ctx, store.MachinePutParams{Name: "delta", Purpose: string(make([]byte, 201)), By: "bob"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		list, err := f.s.MachineList(f.ctx)
		noErr(f, err, "MachineList")
		same(f, "names", []string{list[0].Name, list[1].Name}, []string{"alpha", "backup-nas"})
		same(f, "listed", list[1], a)

		edited, err := f.s.MachinePut(f.ctx, store.MachinePutParams{ID: a.ID, Name: "backup-nas", Purpose: "backups", Owner: "ops",
			OSRelease: "debian 12", By: "carol", Now: f.at(time.Hour)})
		noErr(f, err, "MachinePut edit")
		if edited.Purpose != "backups" || !edited.RetireBy.IsZero() || !edited.ConfirmedAt.Equal(f.at(time.Hour)) || edited.ConfirmedBy != "carol" ||
			edited.CreatedBy != "alice" || !edited.CreatedAt.Equal(f.at(0)) {
			f.Fatalf("edited %+v", edited)
		}
		c, err := f.s.MachineConfirm(f.ctx, store.MachineConfirmParams{ID: a.ID, By: "dave", Now: f.at(2 * time.Hour)})
		noErr(f, err, "MachineConfirm")
		if !c.ConfirmedAt.Equal(f.at(2*time.Hour)) || c.ConfirmedBy != "dave" || c.Purpose != "backups" {
			f.Fatalf("confirmed %+v", c)
		}
		got, err := f.s.MachineGet(f.ctx, store.MachineGetParams{ID: a.ID})
		noErr(f, err, "MachineGet")
		same(f, "got", got, c)
		_, err = f.s.MachineConfirm(f.ctx, store.MachineConfirmParams{ID: "mach_missing", By: "dave"})
		testkit.WantCode(f, err, errcode.MachineNotFound)
		noErr(f, f.s.MachineRemove(f.ctx, store.MachineRemoveParams{ID: a.ID}), "MachineRemove")
		testkit.WantCode(f, f.s.MachineRemove(f.ctx, store.MachineRemoveParams{ID: a.ID}), errcode.MachineNotFound)
		_, err = f.s.MachineGet(f.ctx, store.MachineGetParams{ID: a.ID})
		testkit.WantCode(f, err, errcode.MachineNotFound)
	}},
	// Job/NewestOutputs: each node's newest completed job of each word asked for, with its output;
	// failed jobs and other words are not read.
	{"Job/NewestOutputs", func(f *fx) {
		n := f.node("web-1", "packages_report", "host_report", "disk_usage")
		finish := func(word string, outcome store.JobState, out string, d time.Duration) {
			f.Helper()
			j := f.job(n, word)
			_, err := f.s.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: f.at(d)})
			noErr(f, err, "JobClaim")
			_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome, Output: json.RawMessage(out), Now: f.at(d)})
			noErr(f, err, "JobFinish")
		}
		finish("packages_report", store.JobCompleted, `{"v":1}`, time.Second)
		finish("packages_report", store.JobCompleted, `{"v":2}`, 2*time.Second)
		finish("packages_report", store.JobFailed, `{"v":3}`, 3*time.Second)
		finish("host_report", store.JobCompleted, `{"h":1}`, 4*time.Second)
		finish("disk_usage", store.JobCompleted, `{"d":1}`, 5*time.Second)
		got, err := f.s.JobNewestOutputs(f.ctx, store.JobNewestOutputsParams{Words: []string{"packages_report", "host_report"}})
		noErr(f, err, "JobNewestOutputs")
		if len(got) != 2 || got[0].Word != "host_report" || string(got[0].Output) != `{"h":1}` || got[1].Word != "packages_report" ||
			string(got[1].Output) != `{"v":2}` || !got[1].FinishedAt.Equal(f.at(2*time.Second)) || got[1].NodeID != n.ID {
			f.Fatalf("newest outputs %+v", got)
		}
		_, err = f.s.JobNewestOutputs(f.ctx, store.JobNewestOutputsParams{})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}
