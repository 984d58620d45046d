package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso/ssotest"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var authURLRE = regexp.MustCompile(`(?m)^  (http\S+)$`)

// TestLogin: lexicon login signs in through a real OpenID provider on loopback (the browser's part
// played by the test, through the provider's login page), keeps the session private, and later
// commands act as the person with the role their groups map to; logout forgets it; a person in no
// mapped group is refused and nothing is kept.
func TestLogin(t *testing.T) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	prov, web, cliClient := ssotest.Start(t, map[string][]string{"ada": {"fleet-admins"}, "nomad": {"contractors"}}, nil, nil)
	cfg, err := sso.Parse([]byte(`{"issuer": "` + prov.Issuer + `", "client_id": "` + web.ID + `", "client_secret": "` + web.Secret +
		`", "cli_client_id": "` + cliClient.ID + `", "roles": {"fleet-admins": "admin"}}`))
	if err != nil {
		t.Fatal(err)
	}
	signOn, err := sso.New(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := seal.New(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(wire.New(wire.Config{Store: st, SSO: signOn, Key: key}).Handler())
	t.Cleanup(srv.Close)
	sessionFile := filepath.Join(t.TempDir(), "session.json")
	t.Setenv("LEXICON_SESSION", sessionFile)
	t.Setenv("LEXICON_PLANE", srv.URL)
	t.Setenv("LEXICON_CA", writeCert(t, srv))
	t.Setenv("LEXICON_TOKEN", "")
	t.Setenv("LEXICON_TOKEN_FILE", "")

	login := func(user string) (int, string, string) {
		var out, errOut testkit.Buffer
		done := make(chan int, 1)
		go func() {
			done <- cli.Run(context.Background(), "lexicon", "", commands(), []string{"login", "-o", "json"}, &out, &errOut)
		}()
		errOut.WaitFor(t, "\n\n")
		m := authURLRE.FindStringSubmatch(errOut.String())
		if m == nil {
			t.Fatalf("login printed no address:\n%s", errOut.String())
		}
		browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		back := ssotest.SignIn(t, browser, m[1], user)
		res, err := http.Get(back.String()) // the browser reaches the CLI's loopback listener
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return testkit.Wait(t, done, "lexicon login to end"), out.String(), errOut.String()
	}

	code, out, errOut := login("ada")
	var got loggedIn
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Name != "ada@example.com" || got.Role != "admin" {
		t.Fatalf("login: %d %s\n%s", code, out, errOut)
	}
	if fi, err := os.Stat(sessionFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the session file: %v %v", fi, err)
	}
	code, who, _ := lexiconEnv(t, map[string]string{"LEXICON_PLANE": srv.URL, "LEXICON_CA": os.Getenv("LEXICON_CA")}, "whoami")
	if code != 0 || who["name"] != "ada@example.com" || who["role"] != "admin" {
		t.Fatalf("whoami after login: %d %v", code, who)
	}

	var lo bytes.Buffer
	if code := cli.Run(t.Context(), "lexicon", "", commands(), []string{"logout"}, &lo, &lo); code != 0 {
		t.Fatalf("logout: %d %s", code, lo.String())
	}
	if code, env, _ := lexiconEnv(t, map[string]string{"LEXICON_PLANE": srv.URL, "LEXICON_CA": os.Getenv("LEXICON_CA")}, "whoami"); code == 0 || env["code"] != errcode.UsageInvalid {
		t.Fatalf("whoami after logout: %d %v", code, env)
	}

	code, out, _ = login("nomad")
	if code == 0 || !bytes.Contains([]byte(out), []byte(errcode.SSONoRole)) {
		t.Fatalf("a person in no mapped group: %d %s", code, out)
	}
	if _, err := os.Stat(sessionFile); !os.IsNotExist(err) {
		t.Fatalf("a refused sign-in left a session: %v", err)
	}
}
