package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestAPISpec: `lexicon api spec` prints the plane's document without a token, byte for byte in text
// and as the same JSON with -o json; --builtin prints the CLI's own without a plane; a plane that does
// not serve it is an error, not an empty document.
func TestAPISpec(t *testing.T) {
	plane := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.SpecPath || r.Header.Get("Authorization") != "" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(errcode.New(errcode.RouteNotFound, "no route"))
			return
		}
		_, _ = w.Write(api.Spec())
	}))
	t.Cleanup(plane.Close)
	t.Setenv("LEXICON_TOKEN", "")
	t.Setenv("LEXICON_PLANE", "")
	run := func(args ...string) (int, []byte) {
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), "lexicon", "", commands(), args, &out, &errOut)
		return code, out.Bytes()
	}
	if code, out := run("api", "spec", "--plane", plane.URL); code != 0 || !bytes.Equal(out, api.Spec()) {
		t.Fatalf("api spec: %d %.200s", code, out)
	}
	code, out := run("api", "spec", "--plane", plane.URL, "-o", "json")
	var doc struct{ OpenAPI string }
	if err := json.Unmarshal(out, &doc); code != 0 || err != nil || doc.OpenAPI != "3.1.1" {
		t.Fatalf("api spec -o json: %d %v %.200s", code, err, out)
	}
	if code, out := run("api", "spec", "--builtin"); code != 0 || !bytes.Equal(out, api.Spec()) {
		t.Fatalf("api spec --builtin: %d %.200s", code, out)
	}
	if code, _ := run("api", "spec"); code != 2 {
		t.Fatalf("api spec without a plane: exit %d", code)
	}
	if code, _ := run("api", "spec", "--plane", plane.URL+"/elsewhere"); code != 1 {
		t.Fatalf("api spec from a plane without it: exit %d", code)
	}
}
