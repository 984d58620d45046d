package storetest

import (
	"bytes"
	"crypto/rand"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func artifact(name string, data []byte) store.ArtifactPut {
	return store.ArtifactPut{Name: name, Digest: digest(data), Data: data}
}

func (f *fx) release(seq int64, arts ...store.ArtifactPut) store.ReleasePutParams {
	bundle := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","sequence":` + string(rune('0'+seq)) + `}`)
	return store.ReleasePutParams{Sequence: seq, Version: "1.0.0", StatementDigest: digest(bundle), Bundle: bundle,
		Artifacts: arts, By: "publisher", Now: f.at(time.Duration(seq) * time.Minute)}
}

var releaseTests = []test{
	{"Release/PutAndRead", func(f *fx) {
		_, err := f.s.ReleaseCurrent(f.ctx)
		testkit.WantCode(f, err, errcode.ReleaseNotFound)
		wasm := []byte("\x00asm\x01\x00\x00\x00 disk_usage")
		manifest := []byte(`{"schema":"lexicon/manifest/v1","name":"disk_usage"}`)
		p := f.release(1, artifact("word/disk_usage@1.0.0.wasm", wasm), artifact("manifest/disk_usage@1.0.0.json", manifest))
		r, err := f.s.ReleasePut(f.ctx, p)
		noErr(f, err, "ReleasePut")
		want := []store.ArtifactRef{
			{Name: "manifest/disk_usage@1.0.0.json", Digest: digest(manifest), Size: int64(len(manifest))},
			{Name: "word/disk_usage@1.0.0.wasm", Digest: digest(wasm), Size: int64(len(wasm))},
		}
		same(f, "artifacts", r.Artifacts, want)
		cur, err := f.s.ReleaseCurrent(f.ctx)
		noErr(f, err, "ReleaseCurrent")
		same(f, "current release", cur, r)
		got, err := f.s.ReleaseGet(f.ctx, store.ReleaseGetParams{Sequence: 1})
		noErr(f, err, "ReleaseGet")
		same(f, "release 1", got, r)
		_, err = f.s.ReleaseGet(f.ctx, store.ReleaseGetParams{Sequence: 2})
		testkit.WantCode(f, err, errcode.ReleaseNotFound)
		a, err := f.s.ArtifactGet(f.ctx, store.ArtifactGetParams{Digest: digest(wasm)})
		noErr(f, err, "ArtifactGet")
		if !bytes.Equal(a.Data, wasm) || a.Size != int64(len(wasm)) || a.Digest != digest(wasm) {
			f.Fatalf("artifact %+v", a)
		}
		has, err := f.s.ArtifactHas(f.ctx, store.ArtifactGetParams{Digest: digest(manifest)})
		noErr(f, err, "ArtifactHas")
		if !has {
			f.Fatal("ArtifactHas = false for a stored artifact")
		}
		missing := digest([]byte("nothing"))
		has, err = f.s.ArtifactHas(f.ctx, store.ArtifactGetParams{Digest: missing})
		noErr(f, err, "ArtifactHas")
		if has {
			f.Fatal("ArtifactHas = true for a missing artifact")
		}
		_, err = f.s.ArtifactGet(f.ctx, store.ArtifactGetParams{Digest: missing})
		testkit.WantCode(f, err, errcode.ModuleNotFound)
		_, err = f.s.ArtifactGet(f.ctx, store.ArtifactGetParams{Digest: "../../etc/passwd"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Release/RollbackRefused", func(f *fx) {
		shared := []byte("shared module")
		_, err := f.s.ReleasePut(f.ctx, f.release(2, artifact("word/a@1.0.0.wasm", shared)))
		noErr(f, err, "ReleasePut 2")
		fresh := []byte("module only in the refused release")
		for _, seq := range []int64{1, 2} {
			_, err = f.s.ReleasePut(f.ctx, f.release(seq, artifact("word/b@1.0.0.wasm", fresh)))
			testkit.WantCode(f, err, errcode.ReleaseRollback)
		}
		has, err := f.s.ArtifactHas(f.ctx, store.ArtifactGetParams{Digest: digest(fresh)})
		noErr(f, err, "ArtifactHas")
		if has {
			f.Fatal("a refused release stored its artifact")
		}
		// A later release may share an artifact with an earlier one.
		r3, err := f.s.ReleasePut(f.ctx, f.release(3, artifact("word/a@1.0.0.wasm", shared), artifact("word/b@1.0.0.wasm", fresh)))
		noErr(f, err, "ReleasePut 3")
		list, err := f.s.ReleaseList(f.ctx, store.ReleaseListParams{})
		noErr(f, err, "ReleaseList")
		if len(list) != 2 || list[0].Sequence != 3 || list[1].Sequence != 2 || list[0].Bundle != nil {
			f.Fatalf("list %+v", list)
		}
		same(f, "listed artifacts", list[0].Artifacts, r3.Artifacts)
		if len(list[1].Artifacts) != 1 {
			f.Fatalf("release 2 artifacts %+v", list[1].Artifacts)
		}
	}},
	{"Release/InvalidRefused", func(f *fx) {
		data := []byte("module")
		cases := []struct {
			name string
			edit func(*store.ReleasePutParams)
			code string
		}{
			{"digest mismatch", func(p *store.ReleasePutParams) { p.Artifacts[0].Data = []byte("other bytes") }, errcode.ModuleDigestMismatch},
			{"digest not hex", func(p *store.ReleasePutParams) { p.Artifacts[0].Digest = "sha256:" + digest(data) }, errcode.StoreParamInvalid},
			{"duplicate name", func(p *store.ReleasePutParams) { p.Artifacts = append(p.Artifacts, p.Artifacts[0]) }, errcode.StoreParamInvalid},
			{"zero sequence", func(p *store.ReleasePutParams) { p.Sequence = 0 }, errcode.StoreParamInvalid},
			{"no bundle", func(p *store.ReleasePutParams) { p.Bundle = nil }, errcode.StoreParamInvalid},
			{"bad statement digest", func(p *store.ReleasePutParams) { p.StatementDigest = "abc" }, errcode.StoreParamInvalid},
		}
		for _, c := range cases {
			p := f.release(1, artifact("word/a@1.0.0.wasm", data))
			c.edit(&p)
			_, err := f.s.ReleasePut(f.ctx, p)
			if !errcode.Has(err, c.code) {
				f.Fatalf("%s: got %v, want %s", c.name, err, c.code)
			}
		}
		_, err := f.s.ReleaseCurrent(f.ctx)
		testkit.WantCode(f, err, errcode.ReleaseNotFound)
		has, err := f.s.ArtifactHas(f.ctx, store.ArtifactGetParams{Digest: digest(data)})
		noErr(f, err, "ArtifactHas")
		if has {
			f.Fatal("a refused release stored its artifact")
		}
	}},
	{"Release/ListPages", func(f *fx) {
		// A caller that must see every release (the contract check on publish) pages by sequence.
		for seq := int64(1); seq <= 5; seq++ {
			_, err := f.s.ReleasePut(f.ctx, f.release(seq, artifact("word/a@1.0.0.wasm", []byte{byte(seq)})))
			noErr(f, err, "ReleasePut")
		}
		var seen []int64
		before := int64(0)
		for pages := 0; ; pages++ {
			if pages > 5 {
				f.Fatalf("paging does not end: %v", seen)
			}
			page, err := f.s.ReleaseList(f.ctx, store.ReleaseListParams{Limit: 2, BeforeSequence: before})
			noErr(f, err, "ReleaseList")
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				seen = append(seen, r.Sequence)
			}
			before = page[len(page)-1].Sequence
		}
		same(f, "sequences paged newest first", seen, []int64{5, 4, 3, 2, 1})
		_, err := f.s.ReleaseList(f.ctx, store.ReleaseListParams{BeforeSequence: -1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Release/LargeArtifact", func(f *fx) {
		// An agent binary: ~50 MB, stored in the database so that every replica can serve it.
		size := 50 << 20
		if raceDetector {
			size = 8 << 20 // hashing and copying 50 MB is all instrumented under -race
		}
		big := make([]byte, size)
		_, _ = rand.Read(big)
		_, err := f.s.ReleasePut(f.ctx, f.release(1, artifact("agent/linux-amd64", big)))
		noErr(f, err, "ReleasePut")
		a, err := f.s.ArtifactGet(f.ctx, store.ArtifactGetParams{Digest: digest(big)})
		noErr(f, err, "ArtifactGet")
		if !bytes.Equal(a.Data, big) {
			f.Fatal("the large artifact came back different")
		}
	}},
}
