package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// session is what `lexicon login` keeps (mode 600, in the user's config folder): the provider's ID
// token, which the API takes as the bearer, and the refresh token that renews it.
type session struct {
	Plane        string    `json:"plane"`
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"client_id"`
	TokenURL     string    `json:"token_url"`
	IDToken      string    `json:"id_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry"`
}

// sessionPath is where the CLI keeps its session: LEXICON_SESSION, else the user's config folder.
func sessionPath() (string, error) {
	if p := os.Getenv("LEXICON_SESSION"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "no config folder for the session; set LEXICON_SESSION")
	}
	return filepath.Join(dir, "lexicon", "session.json"), nil
}

func readSession() (session, error) {
	var s session
	p, err := sessionPath()
	if err != nil {
		return s, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return s, err
	}
	fi, err := os.Stat(p)
	if err == nil && fi.Mode().Perm()&0o077 != 0 {
		return s, errcode.New(errcode.KeyFileUntrusted, "the session file %s is open to other users (mode %04o); run lexicon login again", p, fi.Mode().Perm())
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, errcode.New(errcode.UsageInvalid, "the session file %s is not one lexicon login wrote; run lexicon login again", p)
	}
	return s, nil
}

func writeSession(s session) error {
	p, err := sessionPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot make %s", filepath.Dir(p))
	}
	data, _ := json.MarshalIndent(s, "", "  ")
	tmp := p + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write the session")
	}
	if err := os.Rename(tmp, p); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write the session")
	}
	return nil
}

// sessionToken is the ID token of the session for plane, renewed with the refresh token when it has
// expired or is about to; "" when there is no session for that plane.
func sessionToken(ctx context.Context, plane string, hc *http.Client) (string, error) {
	s, err := readSession()
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil || s.Plane != plane {
		return "", err
	}
	if time.Until(s.Expiry) > 30*time.Second {
		return s.IDToken, nil
	}
	if s.RefreshToken == "" {
		return "", errcode.New(errcode.SSORefused, "the session for %s has expired; run lexicon login", plane)
	}
	conf := oauth2.Config{ClientID: s.ClientID, Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL}}
	tok, err := conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), &oauth2.Token{RefreshToken: s.RefreshToken}).Token()
	if err != nil {
		return "", errcode.New(errcode.SSORefused, "the provider would not renew the session (%v); run lexicon login", oauthReason(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errcode.New(errcode.SSORefused, "the provider renewed the session without an ID token; run lexicon login")
	}
	s.IDToken, s.Expiry = raw, tok.Expiry
	if tok.RefreshToken != "" {
		s.RefreshToken = tok.RefreshToken
	}
	return raw, writeSession(s)
}

func oauthReason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		return re.ErrorCode
	}
	return err.Error()
}

type loggedIn struct {
	Plane  string    `json:"plane"`
	Issuer string    `json:"issuer"`
	Name   string    `json:"name"`
	Role   api.Role  `json:"role"`
	Expiry time.Time `json:"expiry"`
}

func (l loggedIn) Text(w io.Writer) {
	fmt.Fprintf(w, "signed in to %s as %s (%s) through %s, until %s\n", l.Plane, l.Name, l.Role, l.Issuer, l.Expiry.Format(time.RFC3339))
}

func loginCmd() *cli.Command {
	var (
		c       conn
		timeout time.Duration
	)
	return &cli.Command{
		Path: "login", MaxArgs: 0,
		Summary: "sign in through the plane's single sign-on provider (a browser on this machine, a loopback redirect); later commands act as you",
		Setup: func(fs *flag.FlagSet) {
			c.setup(fs)
			fs.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the browser to come back")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if c.plane == "" {
				return nil, errcode.New(errcode.UsageInvalid, "name the plane with --plane URL or LEXICON_PLANE")
			}
			if err := checkPlaneURL(c.plane); err != nil {
				return nil, err
			}
			hc, _, err := c.httpClient()
			if err != nil {
				return nil, err
			}
			pc := &client{base: trimSlash(c.plane), http: hc}
			var info api.SSOInfo
			if err := pc.get(ctx, api.SSOPath, &info); err != nil {
				return nil, err
			}
			if info.ClientID == "" {
				return nil, errcode.New(errcode.SSOUnavailable, "the plane lets the web UI sign in through %s, but names no client for the CLI; use a token", info.Issuer)
			}
			pctx := oidc.ClientContext(ctx, http.DefaultClient)
			provider, err := oidc.NewProvider(pctx, info.Issuer)
			if err != nil {
				return nil, errcode.New(errcode.SSOUnavailable, "cannot reach the single sign-on provider %s: %v", info.Issuer, err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot listen on loopback for the browser's return")
			}
			defer ln.Close()
			conf := oauth2.Config{ClientID: info.ClientID, Endpoint: provider.Endpoint(),
				RedirectURL: fmt.Sprintf("http://%s/callback", ln.Addr()),
				Scopes:      []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess}}
			state, verifier := randomState(), oauth2.GenerateVerifier()
			fmt.Fprintf(env.Stderr, "Open this address in a browser on this machine to sign in:\n\n  %s\n\n", conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
			code, err := awaitCode(ctx, ln, state, timeout)
			if err != nil {
				return nil, err
			}
			tok, err := conf.Exchange(pctx, code, oauth2.VerifierOption(verifier))
			if err != nil {
				return nil, errcode.New(errcode.SSORefused, "the provider refused the sign-in: %s", oauthReason(err))
			}
			raw, _ := tok.Extra("id_token").(string)
			if raw == "" {
				return nil, errcode.New(errcode.SSORefused, "the provider answered without an ID token")
			}
			s := session{Plane: pc.base, Issuer: info.Issuer, ClientID: info.ClientID, TokenURL: provider.Endpoint().TokenURL,
				IDToken: raw, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry}
			// The plane is asked who this is: its verdict (issuer, audience, groups mapped to a role) is
			// the one that counts, so a sign-in the plane would refuse is not kept.
			pc.token = raw
			var who api.Token
			if err := pc.call(ctx, api.Whoami, nil, nil, nil, &who); err != nil {
				return nil, err
			}
			if err := writeSession(s); err != nil {
				return nil, err
			}
			return loggedIn{Plane: s.Plane, Issuer: s.Issuer, Name: who.Name, Role: who.Role, Expiry: s.Expiry}, nil
		},
	}
}

func logoutCmd() *cli.Command {
	return &cli.Command{
		Path: "logout", MaxArgs: 0,
		Summary: "forget the session lexicon login kept",
		Run: func(context.Context, *cli.Env, []string) (any, error) {
			p, err := sessionPath()
			if err != nil {
				return nil, err
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot remove %s", p)
			}
			return struct {
				Removed string `json:"removed"`
			}{p}, nil
		},
	}
}

// awaitCode serves the loopback redirect until the browser brings the code for state.
func awaitCode(ctx context.Context, ln net.Listener, state string, timeout time.Duration) (string, error) {
	type answer struct {
		code string
		err  error
	}
	got := make(chan answer, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var a answer
		switch {
		case r.URL.Path != "/callback":
			http.NotFound(w, r)
			return
		case q.Get("error") != "":
			a.err = errcode.New(errcode.SSORefused, "the provider refused the sign-in: %s %s", q.Get("error"), q.Get("error_description"))
		case q.Get("state") != state:
			http.Error(w, "this sign-in was not started here", http.StatusBadRequest)
			return
		default:
			a.code = q.Get("code")
		}
		if a.err != nil {
			fmt.Fprintln(w, "The sign-in failed; see the terminal.")
		} else {
			fmt.Fprintln(w, "Signed in: you may close this page and go back to the terminal.")
		}
		select {
		case got <- a:
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-got:
		return a.code, a.err
	case <-t.C:
		return "", errcode.New(errcode.SSORefused, "no browser came back within %s; run lexicon login again", timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func randomState() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
