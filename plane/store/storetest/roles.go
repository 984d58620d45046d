package storetest

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func init() { releaseTests = append(releaseTests, roleTests...) }

func (f *fx) rolePut(name, spec string, base int, contents ...[]byte) store.RolePutParams {
	p := store.RolePutParams{Name: name, Spec: json.RawMessage(spec), Base: base, By: "admin", Now: f.at(time.Minute)}
	for _, c := range contents {
		p.Contents = append(p.Contents, store.RoleContent{Digest: digest(c), Data: c})
	}
	return p
}

var roleTests = []test{
	// Role/Versions: create makes version 1, each edit the next, every version is kept and read back;
	// the content a version names is stored as an artifact, yet not as a released one.
	{"Role/Versions", func(f *fx) {
		conf := []byte("worker_processes 2;\n")
		v1, err := f.s.RoleCreate(f.ctx, f.rolePut("web", `{"name":"web","v":1}`, 0, conf))
		noErr(f, err, "RoleCreate")
		if v1.Version != 1 || v1.Name != "web" || v1.CreatedBy != "admin" {
			f.Fatalf("created %+v", v1)
		}
		_, err = f.s.RoleCreate(f.ctx, f.rolePut("web", `{}`, 0))
		testkit.WantCode(f, err, errcode.RoleExists)

		v2, err := f.s.RoleEdit(f.ctx, f.rolePut("web", `{"name":"web","v":2}`, 1, conf, []byte("new")))
		noErr(f, err, "RoleEdit")
		if v2.Version != 2 {
			f.Fatalf("edited %+v", v2)
		}
		_, err = f.s.RoleEdit(f.ctx, f.rolePut("web", `{"name":"web","v":3}`, 1))
		testkit.WantCode(f, err, errcode.RoleStale)
		_, err = f.s.RoleEdit(f.ctx, f.rolePut("db", `{}`, 0))
		testkit.WantCode(f, err, errcode.RoleNotFound)

		got, err := f.s.RoleGet(f.ctx, store.RoleGetParams{Name: "web"})
		noErr(f, err, "RoleGet")
		if got.Version != 2 || string(got.Spec) != `{"name":"web","v":2}` {
			f.Fatalf("newest = %+v (%s)", got, got.Spec)
		}
		old, err := f.s.RoleGet(f.ctx, store.RoleGetParams{Name: "web", Version: 1})
		noErr(f, err, "RoleGet v1")
		if old.Version != 1 || string(old.Spec) != `{"name":"web","v":1}` || !old.CreatedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("v1 = %+v", old)
		}
		_, err = f.s.RoleGet(f.ctx, store.RoleGetParams{Name: "web", Version: 3})
		testkit.WantCode(f, err, errcode.RoleNotFound)
		_, err = f.s.RoleGet(f.ctx, store.RoleGetParams{Name: "nope"})
		testkit.WantCode(f, err, errcode.RoleNotFound)

		hist, err := f.s.RoleHistory(f.ctx, store.RoleHistoryParams{Name: "web"})
		noErr(f, err, "RoleHistory")
		if len(hist) != 2 || hist[0].Version != 2 || hist[1].Version != 1 {
			f.Fatalf("history = %+v", hist)
		}
		_, err = f.s.RoleHistory(f.ctx, store.RoleHistoryParams{Name: "nope"})
		testkit.WantCode(f, err, errcode.RoleNotFound)

		_, err = f.s.RoleCreate(f.ctx, f.rolePut("db", `{"name":"db"}`, 0))
		noErr(f, err, "RoleCreate db")
		list, err := f.s.RoleList(f.ctx, store.RoleListParams{})
		noErr(f, err, "RoleList")
		if len(list) != 2 || list[0].Name != "db" || list[1].Name != "web" || list[1].Version != 2 {
			f.Fatalf("list = %+v", list)
		}

		a, err := f.s.ArtifactGet(f.ctx, store.ArtifactGetParams{Digest: digest(conf)})
		noErr(f, err, "ArtifactGet")
		if string(a.Data) != string(conf) {
			f.Fatalf("content = %q", a.Data)
		}
		rel, err := f.s.ArtifactReleased(f.ctx, store.ArtifactGetParams{Digest: digest(conf)})
		noErr(f, err, "ArtifactReleased")
		if rel {
			f.Fatal("a role's content reads as released")
		}
		wasm := []byte("\x00asm role test")
		_, err = f.s.ReleasePut(f.ctx, f.release(1, artifact("word/x@1.0.0.wasm", wasm)))
		noErr(f, err, "ReleasePut")
		if rel, err = f.s.ArtifactReleased(f.ctx, store.ArtifactGetParams{Digest: digest(wasm)}); err != nil || !rel {
			f.Fatalf("a released artifact reads as not released (%v)", err)
		}
	}},
	// Role/Refusals: nothing is stored for a bad name, spec or content.
	{"Role/Refusals", func(f *fx) {
		_, err := f.s.RoleCreate(f.ctx, f.rolePut("Web", `{}`, 0))
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.RoleCreate(f.ctx, f.rolePut("web", `{`, 0))
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		p := f.rolePut("web", `{}`, 0, []byte("a"))
		p.Contents[0].Data = []byte("b")
		_, err = f.s.RoleCreate(f.ctx, p)
		testkit.WantCode(f, err, errcode.ModuleDigestMismatch)
		_, err = f.s.RoleGet(f.ctx, store.RoleGetParams{Name: "web"})
		testkit.WantCode(f, err, errcode.RoleNotFound)
	}},
	// Role/Assignments: assign is idempotent per selector, unassign removes one, and both name a role
	// that exists.
	{"Role/Assignments", func(f *fx) {
		_, err := f.s.RoleAssign(f.ctx, store.RoleAssignParams{Role: "web", Selector: "role=web", By: "admin"})
		testkit.WantCode(f, err, errcode.RoleNotFound)
		_, err = f.s.RoleCreate(f.ctx, f.rolePut("web", `{}`, 0))
		noErr(f, err, "RoleCreate")
		_, err = f.s.RoleCreate(f.ctx, f.rolePut("base", `{}`, 0))
		noErr(f, err, "RoleCreate")
		a, err := f.s.RoleAssign(f.ctx, store.RoleAssignParams{Role: "web", Selector: "role=web", By: "alice", Now: f.at(0)})
		noErr(f, err, "RoleAssign")
		again, err := f.s.RoleAssign(f.ctx, store.RoleAssignParams{Role: "web", Selector: "role=web", By: "bob", Now: f.at(time.Hour)})
		noErr(f, err, "RoleAssign again")
		if again.CreatedBy != "alice" || !again.CreatedAt.Equal(a.CreatedAt) || a.Selector != "role=web" {
			f.Fatalf("assignments %+v, %+v", a, again)
		}
		_, err = f.s.RoleAssign(f.ctx, store.RoleAssignParams{Role: "base", Selector: "all", By: "alice", Now: f.at(0)})
		noErr(f, err, "RoleAssign base")
		all, err := f.s.RoleAssignmentList(f.ctx, store.RoleAssignmentListParams{})
		noErr(f, err, "RoleAssignmentList")
		if len(all) != 2 || all[0].Role != "base" || all[1].Role != "web" {
			f.Fatalf("assignments = %+v", all)
		}
		web, err := f.s.RoleAssignmentList(f.ctx, store.RoleAssignmentListParams{Role: "web"})
		noErr(f, err, "RoleAssignmentList web")
		if len(web) != 1 {
			f.Fatalf("web's = %+v", web)
		}
		noErr(f, f.s.RoleUnassign(f.ctx, store.RoleUnassignParams{Role: "web", Selector: "role=web"}), "RoleUnassign")
		testkit.WantCode(f, f.s.RoleUnassign(f.ctx, store.RoleUnassignParams{Role: "web", Selector: "role=web"}), errcode.RoleNotFound)
	}},
	// Rollout/StepParams: a job rollout may give a node its own params for the change, read back by
	// node; a node without takes the rollout's (nil); a release rollout takes none.
	{"Rollout/StepParams", func(f *fx) {
		a, b := f.node("a"), f.node("b")
		own := json.RawMessage(`{"mode":"apply","footprint":{"schema":"lexicon/footprint/v1"}}`)
		ro, err := f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "converge", Params: json.RawMessage(`{"mode":"apply"}`),
			Selector: "all", Stages: []string{"100%"},
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: "a", Params: own}, {NodeID: b.ID, NodeName: "b"}},
			By:    "admin", Now: f.at(0)})
		noErr(f, err, "RolloutCreate")
		got, err := f.s.RolloutParamsGet(f.ctx, store.RolloutParamsGetParams{RolloutID: ro.ID, NodeID: a.ID})
		noErr(f, err, "RolloutParamsGet")
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil || v["mode"] != "apply" || v["footprint"] == nil {
			f.Fatalf("a's params = %s (%v)", got, err)
		}
		if got, err = f.s.RolloutParamsGet(f.ctx, store.RolloutParamsGetParams{RolloutID: ro.ID, NodeID: b.ID}); err != nil || got != nil {
			f.Fatalf("b's params = %s (%v)", got, err)
		}
		_, err = f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutRelease, ReleaseSequence: 1, Selector: "all", Stages: []string{"100%"},
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: "a", Params: own}}, By: "admin", Now: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}
