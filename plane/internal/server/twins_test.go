package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// twins are two words on one module (a word learns its name from argv[0]): a harmless look and a
// destructive one with params of its own.
var twins = []testWord{
	{name: "look", class: manifest.ClassLook, module: "twins"},
	{name: "destructive", class: manifest.ClassDestructive, module: "twins", params: `{"force":{"type":"boolean"}}`},
}

// TestTwinWordsAreAuthorisedByName: a job is authorised, classed and checked by its word's own
// manifest, never by another word's that happens to pin the same module bytes.
func TestTwinWordsAreAuthorisedByName(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	rel := p.publish(twins, nil)
	if rel.words["look"].Digest != rel.words["destructive"].Digest {
		t.Fatalf("the twins do not share a module: %+v", rel.words)
	}
	p.report(p.key, rel.words["look"], rel.words["destructive"])
	post := http.MethodPost
	body := func(word, params string) []byte {
		b, _ := json.Marshal(api.JobRequest{Node: p.node.ID, Word: word, Params: json.RawMessage(params)})
		return b
	}

	for _, params := range []string{`{}`, `{"force":true}`} {
		p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleOperator, post, "/jobs", body("destructive", params), nil)
	}
	var jobs store.JobListResult
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/jobs", nil, &jobs)
	if len(jobs.Jobs) != 0 {
		t.Fatalf("a refused job was stored: %+v", jobs.Jobs)
	}

	var j store.Job
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/jobs", body("destructive", `{"force":true}`), &j)
	if j.Word != "destructive" || j.Class != string(manifest.ClassDestructive) {
		t.Fatalf("destructive job stored as %s %s", j.Word, j.Class)
	}
	p.want(http.StatusCreated, "", store.RoleOperator, post, "/jobs", body("look", `{"n":1}`), &j)
	if j.Word != "look" || j.Class != string(manifest.ClassLook) {
		t.Fatalf("look job stored as %s %s", j.Word, j.Class)
	}
	// Each is checked against its own schema, not its twin's.
	p.want(http.StatusUnprocessableEntity, errcode.WordParamInvalid, store.RoleAdmin, post, "/jobs", body("look", `{"force":true}`), nil)
	p.want(http.StatusUnprocessableEntity, errcode.WordParamInvalid, store.RoleAdmin, post, "/jobs", body("destructive", `{"n":1}`), nil)
}

// TestTwinWordsKeepTheirOwnContracts: publishing compares each word with its own earlier manifest, so a
// twin's changed params are refused, and unchanged twins pass.
func TestTwinWordsKeepTheirOwnContracts(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	p.publish(twins, nil)
	p.publish(twins, nil) // unchanged: each word is compared with itself and holds

	for _, tc := range []struct {
		name  string
		words []testWord
	}{
		{"destructive gains a param", []testWord{twins[0], {name: "destructive", class: manifest.ClassDestructive, module: "twins", params: `{"force":{"type":"boolean"},"all":{"type":"boolean"}}`}}},
		{"look changes class", []testWord{{name: "look", class: manifest.ClassChange, module: "twins"}, twins[1]}},
	} {
		next := p.build(p.pub, tc.words, nil)
		if status, code, data := p.admin(store.RoleAdmin, http.MethodPost, "/releases", tarRelease(t, next.dir)); status != http.StatusBadRequest || code != errcode.ContractBroken {
			t.Errorf("%s: %d %s, want 400 %s: %s", tc.name, status, code, errcode.ContractBroken, data)
		}
	}
}
