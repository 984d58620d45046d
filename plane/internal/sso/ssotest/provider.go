// Package ssotest starts a real OpenID Connect provider on loopback for tests: zitadel/oidc's provider
// package with its example storage and login page, whose people carry a groups claim the test can
// change while the provider runs (to take someone out of a group).
package ssotest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// LoopbackRedirect is a redirect every client is registered with, that nothing serves: a test reads
// the code from where the provider sends the browser.
const LoopbackRedirect = "http://127.0.0.1:1/callback"

// Password is every person's password at the provider.
const Password = "correct horse battery staple"

// Provider is a running provider.
type Provider struct {
	Issuer string
	store  *groupStorage
}

// Client is a client registered at the provider.
type Client struct {
	ID, Secret string
}

// registerMu serialises the example storage's package-level client registry.
var registerMu sync.Mutex

// Start runs a provider whose people are named by groups (username → groups) and whose clients are
// web (with a secret, redirecting to redirects) or native (public, loopback redirects on any port).
// Client ids are made unique to this provider, since the example keeps clients in a package-level map.
func Start(t testing.TB, people map[string][]string, web []string, redirects []string) (*Provider, Client, Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	users := userStore{byID: map[string]*storage.User{}}
	gs := &groupStorage{groups: map[string][]string{}}
	for name, groups := range people {
		users.byID[name] = &storage.User{ID: name, Username: name, Password: Password, FirstName: name, LastName: "Test",
			Email: name + "@example.com", EmailVerified: true, PreferredLanguage: language.English}
		gs.groups[name] = groups
	}
	port := ln.Addr().(*net.TCPAddr).Port
	webClient := Client{ID: "lexicon-ui-" + itoa(port), Secret: "web-secret-" + itoa(port)}
	cliClient := Client{ID: "lexicon-cli-" + itoa(port)}
	registerMu.Lock()
	storage.RegisterClients(storage.WebClient(webClient.ID, webClient.Secret, redirects...),
		storage.NativeClient(cliClient.ID, "http://127.0.0.1/callback", "http://localhost/callback"))
	for _, id := range web {
		storage.RegisterClients(storage.WebClient(id+"-"+itoa(port), "other-secret", append(slices.Clone(redirects), LoopbackRedirect)...))
	}
	gs.Storage = storage.NewStorage(users)
	registerMu.Unlock()
	srv := &http.Server{Handler: exampleop.SetupServer(issuer, gs, nil, false)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &Provider{Issuer: issuer, store: gs}, webClient, cliClient
}

// OtherClient is the id of a further web client registered with Start's web list.
func (p *Provider) OtherClient(name string) string {
	_, port, _ := net.SplitHostPort(p.Issuer[len("http://") : len(p.Issuer)-1])
	return name + "-" + port
}

// SetGroups changes a person's groups; the next token the provider issues carries them.
func (p *Provider) SetGroups(user string, groups ...string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.groups[user] = groups
}

// groupStorage is the example storage with a groups claim, and the email claim, in every ID token.
type groupStorage struct {
	*storage.Storage
	mu     sync.Mutex
	groups map[string][]string
}

func (g *groupStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := g.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	info.AppendClaims("groups", slices.Clone(g.groups[req.GetSubject()]))
	info.AppendClaims("email", req.GetSubject()+"@example.com")
	return nil
}

type userStore struct{ byID map[string]*storage.User }

func (u userStore) GetUserByID(id string) *storage.User { return u.byID[id] }
func (u userStore) GetUserByUsername(name string) *storage.User {
	return u.byID[name]
}
func (u userStore) ExampleClientID() string { return "service" }

func itoa(n int) string { return strconv.Itoa(n) }

var loginIDRE = regexp.MustCompile(`name="id" value="([^"]+)"`)

// SignIn walks a browser through the provider's login page as user, from the authorization URL a
// relying party sent it to, and returns where the provider sends the browser back (the relying
// party's redirect, with the code and state). c must not follow redirects.
func SignIn(t testing.TB, c *http.Client, authURL, user string) *url.URL {
	t.Helper()
	next := authURL
	for range 10 {
		res, err := c.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if m := loginIDRE.FindSubmatch(body); m != nil && res.StatusCode == http.StatusOK {
			base, _ := url.Parse(next)
			form := url.Values{"id": {string(m[1])}, "username": {user}, "password": {Password}}
			res, err = c.PostForm(base.ResolveReference(&url.URL{Path: "/login/username"}).String(), form)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
		loc, err := res.Location()
		if err != nil {
			t.Fatalf("provider answered %d without a redirect at %s:\n%s", res.StatusCode, next, body)
		}
		if loc.Query().Get("code") != "" || loc.Query().Get("error") != "" {
			return loc
		}
		next = loc.String()
	}
	t.Fatalf("the provider never redirected back")
	return nil
}
