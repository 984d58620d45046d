package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// getArtifact asks the artifact route for q, signed as the plane's node, and decodes a 200 into out.
func (p *plane) getArtifact(q url.Values, out any) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+channel.PathArtifact+"?"+q.Encode(), nil)
	if err := httpsig.Sign(req, nil, p.key, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			p.t.Fatal(err)
		}
		return resp.StatusCode, ""
	}
	var env errcode.Envelope
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Error.Code
}

// TestClaimCheckpointsAndProofs: a claim's checkpoints are stored, what the store could not hold left
// out rather than failing the claim; the artifact route serves the log's consistency proof to a
// signed node, and says log.unavailable when the plane reads no log.
func TestClaimCheckpointsAndProofs(t *testing.T) {
	lg := tlogtest.New("log.lexicon.test")
	srv := lg.Server()
	defer srv.Close()
	var cps []checkpoint.Checkpoint
	for i := range 5 {
		if err := lg.AppendLeaf([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		signed, err := lg.Checkpoint(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Open(signed, lg.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, cp)
	}
	st := storetest.SQLiteOpener(t).Store
	views := logviews.New(logviews.Config{Store: st, URLs: []string{srv.URL},
		LogKeys: func() ([]keys.LogPublic, error) { return []keys.LogPublic{lg.PublicKey()}, nil }})
	p := newPlaneOn(t, server.Config{LogViews: views}, st)

	held := cps[1].Summary()
	claim := channel.ClaimRequest{Version: "test", Vocabulary: []channel.Word{}, Recipes: []channel.RecipeReport{}, Checkpoints: []channel.Checkpoint{
		{Origin: held.Origin, Size: held.Size, RootHash: held.RootHash()},
		{Origin: held.Origin, Size: 9, RootHash: held.RootHash()},                // the same log twice
		{Origin: "other.log", Size: 3, RootHash: "not base64"},                   // a root that is no hash
		{Origin: "third.log", Size: 1 << 63, RootHash: held.RootHash()},          // a size the store cannot hold
		{Origin: "with space", Size: 3, RootHash: strings.Repeat("A", 43) + "="}, // an origin that is no name
	}}
	claim.ReportDigest = claim.Digest()
	body, _ := json.Marshal(claim)
	if status, code := p.post(channel.PathClaim, body, p.key); status != http.StatusOK {
		t.Fatalf("claim: %d %s", status, code)
	}
	got, err := st.NodeCheckpointList(t.Context(), store.NodeCheckpointListParams{NodeID: p.node.ID})
	if err != nil || len(got) != 1 || got[0].Size != 2 || got[0].RootHash != held.RootHash() {
		t.Fatalf("stored %+v (%v)", got, err)
	}

	var proof checkpoint.Proof
	q := url.Values{"log_proof": {"log.lexicon.test"}, "old": {"2"}, "new": {"5"}}
	if status, code := p.getArtifact(q, &proof); status != http.StatusOK {
		t.Fatalf("log proof: %d %s", status, code)
	}
	if err := proof.Verify(cps[1], cps[4]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    url.Values
		code string
	}{
		{url.Values{"log_proof": {"log.lexicon.test"}, "old": {"2"}}, errcode.RequestMalformed},
		{url.Values{"log_proof": {"log.lexicon.test"}, "old": {"x"}, "new": {"5"}}, errcode.RequestMalformed},
		{url.Values{"log_proof": {"log.lexicon.test"}, "old": {"5"}, "new": {"2"}}, errcode.UsageInvalid},
		{url.Values{"log_proof": {"other.log"}, "old": {"1"}, "new": {"2"}}, errcode.LogUnavailable},
		{url.Values{"log_proof": {"log.lexicon.test"}, "old": {"2"}, "new": {"50"}}, errcode.LogUnavailable},
	} {
		if _, code := p.getArtifact(c.q, nil); code != c.code {
			t.Errorf("%v: %s, want %s", c.q, code, c.code)
		}
	}
	none := newPlane(t, server.Config{})
	if _, code := none.getArtifact(q, nil); code != errcode.LogUnavailable {
		t.Fatalf("a plane that reads no log: %s", code)
	}
}
