package storetest

import (
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func backupTarget(name string) store.BackupTarget {
	return store.BackupTarget{Name: name, Endpoint: "http://127.0.0.1:7070", Region: "us-east-1", Bucket: "backups", Prefix: "fleet",
		AccessKeyID: "AKID", Recovery: "age1recovery", Sealed: []byte("sealed-secret"), KeyID: "0123456789abcdef", CreatedBy: "admin"}
}

var backupTests = []test{
	{"Backup/TargetCreateGetListDelete", func(f *fx) {
		t, err := f.s.BackupTargetCreate(f.ctx, store.BackupTargetCreateParams{Target: backupTarget("b2"), Now: f.at(time.Minute)})
		noErr(f, err, "BackupTargetCreate")
		_, err = f.s.BackupTargetCreate(f.ctx, store.BackupTargetCreateParams{Target: backupTarget("b2")})
		testkit.WantCode(f, err, errcode.BackupTargetExists)
		got, err := f.s.BackupTargetGet(f.ctx, store.BackupTargetGetParams{Name: "b2"})
		noErr(f, err, "BackupTargetGet")
		same(f, "target", got, t)
		list, err := f.s.BackupTargetList(f.ctx, store.BackupTargetListParams{})
		noErr(f, err, "BackupTargetList")
		same(f, "list", len(list), 1)
		noErr(f, f.s.BackupTargetDelete(f.ctx, store.BackupTargetDeleteParams{Name: "b2"}), "BackupTargetDelete")
		testkit.WantCode(f, f.s.BackupTargetDelete(f.ctx, store.BackupTargetDeleteParams{Name: "b2"}), errcode.BackupTargetNotFound)
		_, err = f.s.BackupTargetGet(f.ctx, store.BackupTargetGetParams{Name: "b2"})
		testkit.WantCode(f, err, errcode.BackupTargetNotFound)
		bad := backupTarget("x")
		bad.Sealed = nil
		_, err = f.s.BackupTargetCreate(f.ctx, store.BackupTargetCreateParams{Target: bad})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Backup/PolicySetListDelete", func(f *fx) {
		n := f.node("db-1")
		fleet := store.BackupPolicy{Enabled: true, Target: "b2", Every: 24 * time.Hour, KeepDays: 14, VerifyEvery: 7 * 24 * time.Hour,
			Paths: []string{"/srv"}, UpdatedBy: "admin"}
		got, err := f.s.BackupPolicySet(f.ctx, store.BackupPolicySetParams{Policy: fleet, Now: f.at(time.Minute)})
		noErr(f, err, "BackupPolicySet")
		if got.Databases == nil || !got.UpdatedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("set %+v", got)
		}
		off := store.BackupPolicy{NodeID: n.ID, Target: "b2", Every: time.Hour, KeepDays: 14, VerifyEvery: time.Hour, UpdatedBy: "admin"}
		_, err = f.s.BackupPolicySet(f.ctx, store.BackupPolicySetParams{Policy: off})
		noErr(f, err, "BackupPolicySet node")
		list, err := f.s.BackupPolicyList(f.ctx, store.BackupPolicyListParams{})
		noErr(f, err, "BackupPolicyList")
		if len(list) != 2 || list[0].NodeID != "" || list[0].Every != 24*time.Hour || list[0].Paths[0] != "/srv" || list[1].Enabled {
			f.Fatalf("list %+v", list)
		}
		fleet.KeepDays = 0
		_, err = f.s.BackupPolicySet(f.ctx, store.BackupPolicySetParams{Policy: fleet})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		noErr(f, f.s.BackupPolicyDelete(f.ctx, store.BackupPolicyDeleteParams{NodeID: n.ID}), "BackupPolicyDelete")
		list, _ = f.s.BackupPolicyList(f.ctx, store.BackupPolicyListParams{})
		same(f, "after delete", len(list), 1)
	}},
	{"Backup/JobsJudgedOnce", func(f *fx) {
		n := f.node("db-1", "backup")
		j := f.job(n, "backup")
		bj, err := f.s.BackupJobCreate(f.ctx, store.BackupJobCreateParams{Job: store.BackupJob{JobID: j.ID, NodeID: n.ID,
			Purpose: store.BackupPurposeRun, Target: "b2", Objects: 16}, Now: f.at(time.Minute)})
		noErr(f, err, "BackupJobCreate")
		if bj.State != store.BackupDispatched || bj.Chain == nil {
			f.Fatalf("created %+v", bj)
		}
		noErr(f, f.s.BackupJobSetRun(f.ctx, store.BackupJobSetRunParams{JobID: j.ID, Run: "20260101T000000.000Z-0a0b0c0d"}), "SetRun")
		noErr(f, f.s.BackupJobSetRun(f.ctx, store.BackupJobSetRunParams{JobID: j.ID, Run: "20260101T000001.000Z-0a0b0c0d"}), "SetRun again")
		list, err := f.s.BackupJobList(f.ctx, store.BackupJobListParams{Dispatched: true})
		noErr(f, err, "BackupJobList")
		if len(list) != 1 || list[0].Run != "20260101T000000.000Z-0a0b0c0d" {
			f.Fatalf("dispatched %+v", list)
		}
		moved, err := f.s.BackupJobJudge(f.ctx, store.BackupJobJudgeParams{JobID: j.ID, State: store.BackupWitnessed, Kind: "full",
			Bytes: 42, Now: f.at(2 * time.Minute)})
		noErr(f, err, "BackupJobJudge")
		if !moved {
			f.Fatal("not judged")
		}
		moved, err = f.s.BackupJobJudge(f.ctx, store.BackupJobJudgeParams{JobID: j.ID, State: store.BackupFailed})
		noErr(f, err, "BackupJobJudge again")
		if moved {
			f.Fatal("judged twice")
		}
		got, err := f.s.BackupJobGet(f.ctx, store.BackupJobGetParams{JobID: j.ID})
		noErr(f, err, "BackupJobGet")
		if got.State != store.BackupWitnessed || got.Bytes != 42 || got.Kind != "full" || !got.JudgedAt.Equal(f.at(2*time.Minute)) {
			f.Fatalf("judged %+v", got)
		}
		list, _ = f.s.BackupJobList(f.ctx, store.BackupJobListParams{Dispatched: true})
		same(f, "dispatched after judging", len(list), 0)
		list, _ = f.s.BackupJobList(f.ctx, store.BackupJobListParams{NodeID: n.ID})
		same(f, "node's", len(list), 1)
		_, err = f.s.BackupJobJudge(f.ctx, store.BackupJobJudgeParams{JobID: j.ID, State: store.BackupDispatched})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Backup/RecentOfEachNode", func(f *fx) {
		a, b, none := f.node("db-1", "backup"), f.node("db-2", "backup"), f.node("web-1", "backup")
		var want []string // a's jobs, the newest first
		for i, n := range []store.Node{a, b, a, a} {
			j := f.job(n, "backup")
			_, err := f.s.BackupJobCreate(f.ctx, store.BackupJobCreateParams{Job: store.BackupJob{JobID: j.ID, NodeID: n.ID,
				Purpose: store.BackupPurposeRun, Target: "b2", Objects: 16}, Now: f.at(time.Duration(i+1) * time.Minute)})
			noErr(f, err, "BackupJobCreate")
			if n.ID == a.ID {
				want = append([]string{j.ID}, want...)
			}
		}
		got, err := f.s.BackupJobListRecent(f.ctx, store.BackupJobListRecentParams{NodeIDs: []string{a.ID, b.ID, none.ID}, PerNode: 2})
		noErr(f, err, "BackupJobListRecent")
		var ids []string
		for _, j := range got[a.ID] {
			ids = append(ids, j.JobID)
		}
		same(f, "a's newest two", strings.Join(ids, ","), strings.Join(want[:2], ","))
		same(f, "b's", len(got[b.ID]), 1)
		same(f, "nodes with jobs", len(got), 2)
		got, err = f.s.BackupJobListRecent(f.ctx, store.BackupJobListRecentParams{PerNode: 2})
		noErr(f, err, "BackupJobListRecent of no node")
		same(f, "no node's", len(got), 0)
		_, err = f.s.BackupJobListRecent(f.ctx, store.BackupJobListRecentParams{NodeIDs: []string{a.ID}})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.BackupJobListRecent(f.ctx, store.BackupJobListRecentParams{NodeIDs: make([]string, store.MaxListLimit+1), PerNode: 1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Backup/RecordedWithItsJob", func(f *fx) {
		n := f.node("db-1", "backup")
		p := f.jobParams(n, "backup")
		p.Backup = &store.BackupJob{Purpose: "nonsense"}
		_, err := f.s.JobCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		res, err := f.s.JobList(f.ctx, store.JobListParams{NodeID: n.ID})
		noErr(f, err, "JobList")
		same(f, "jobs after a refused record", len(res.Jobs), 0)
		p.Backup = &store.BackupJob{Purpose: store.BackupPurposeVerify, Target: "b2", Run: "r1", Chain: []string{"r1"}}
		j, err := f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate")
		bj, err := f.s.BackupJobGet(f.ctx, store.BackupJobGetParams{JobID: j.ID})
		noErr(f, err, "BackupJobGet")
		if bj.NodeID != n.ID || bj.Purpose != store.BackupPurposeVerify || bj.Run != "r1" || !bj.StartedAt.Equal(j.CreatedAt) || bj.State != store.BackupDispatched {
			f.Fatalf("recorded %+v", bj)
		}
	}},
	{"Backup/RestoreRecordedAndJudged", func(f *fx) {
		// A restore queued from the plane is recorded with its job, names the run and chain its read
		// grant covers, and takes a restore's verdicts only.
		n := f.node("db-1", "backup_restore")
		p := f.jobParams(n, "backup_restore")
		p.Backup = &store.BackupJob{Purpose: store.BackupPurposeRestore, Target: "b2", Run: "r2", Chain: []string{"r1", "r2"}}
		j, err := f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate")
		bj, err := f.s.BackupJobGet(f.ctx, store.BackupJobGetParams{JobID: j.ID})
		noErr(f, err, "BackupJobGet")
		if bj.Purpose != store.BackupPurposeRestore || bj.Run != "r2" || len(bj.Chain) != 2 || bj.Chain[0] != "r1" || bj.State != store.BackupDispatched {
			f.Fatalf("recorded %+v", bj)
		}
		moved, err := f.s.BackupJobJudge(f.ctx, store.BackupJobJudgeParams{JobID: j.ID, State: store.BackupRestored, Detail: "restored", Now: f.at(time.Minute)})
		noErr(f, err, "BackupJobJudge")
		if !moved {
			f.Fatal("not judged")
		}
		got, err := f.s.BackupJobGet(f.ctx, store.BackupJobGetParams{JobID: j.ID})
		noErr(f, err, "BackupJobGet")
		same(f, "state", got.State, store.BackupRestored)
	}},
	{"Backup/FindingsRaiseAndClearIncidents", func(f *fx) {
		n := f.node("db-1")
		noErr(f, f.s.BackupFindingsSet(f.ctx, store.BackupFindingsSetParams{NodeID: n.ID, Findings: []store.BackupFinding{
			{Source: store.DetectorBackupIncomplete, Summary: "run r: object k is missing"},
		}}), "BackupFindingsSet")
		changes := f.reconcile(time.Minute, nil)
		if got := kinds(changes); len(got) != 1 || got[0] != store.DetectorBackupIncomplete+"/opened" {
			f.Fatalf("changes %v", got)
		}
		same(f, "summary", changes[0].Incident.Summary, "run r: object k is missing")
		err := f.s.BackupFindingsSet(f.ctx, store.BackupFindingsSetParams{NodeID: n.ID, Findings: []store.BackupFinding{{Source: "plane:other", Summary: "x"}}})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		noErr(f, f.s.BackupFindingsSet(f.ctx, store.BackupFindingsSetParams{NodeID: n.ID}), "BackupFindingsSet clear")
		list, err := f.s.BackupFindingsList(f.ctx, store.BackupFindingsListParams{})
		noErr(f, err, "BackupFindingsList")
		same(f, "findings", len(list), 0)
		if got := kinds(f.reconcile(2*time.Minute, nil)); len(got) == 0 || got[0] != store.DetectorBackupIncomplete+"/cleared" {
			f.Fatalf("changes %v", got)
		}
	}},
}
