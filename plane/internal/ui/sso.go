package ui

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ssoCookie carries a sign-in's state and PKCE verifier from the start to the provider's redirect back.
// It is SameSite=Lax, not Strict: the redirect back is a top-level navigation from the provider's site,
// which a Strict cookie would not ride on. It opens nothing by itself: the state must match the one the
// provider returns, and the verifier is useless without the code.
const ssoCookie = "lexicon_sso"

// ssoSessionPrefix marks a session cookie of a person signed in through single sign-on, so a request
// is looked up in the one table that holds it.
const ssoSessionPrefix = "sso_"

// SSOStore is what single sign-on keeps: the sessions of people signed in through the provider.
type SSOStore interface {
	SSOSessionCreate(ctx context.Context, p store.SSOSessionCreateParams) (store.SSOSession, error)
	SSOSessionGet(ctx context.Context, p store.SSOSessionGetParams) (store.SSOSession, error)
	SSOSessionRefresh(ctx context.Context, p store.SSOSessionRefreshParams) error
	SSOSessionDelete(ctx context.Context, p store.SSOSessionDeleteParams) error
}

// Sealer seals the provider's refresh tokens at rest (the plane's master key).
type Sealer interface {
	Seal(plaintext, context []byte) []byte
	Open(sealed, context []byte) ([]byte, error)
}

// SSO is what the UI needs for single sign-on; a nil Provider offers none.
type SSO struct {
	Provider *sso.SSO
	Store    SSOStore
	Key      Sealer
}

// noSSO answers the single sign-on pages of a plane that has none: there is no such page here.
func noSSO() error {
	return errcode.New(errcode.RouteNotFound, "this plane has no single sign-on; sign in with a token")
}

// sealContext binds a sealed refresh token to its session: one copied to another row does not open.
// The master key rotation re-seals these rows, so the seal package owns the context.
func sealContext(idHash string) []byte { return seal.SSORefreshContext(idHash) }

func (u *UI) ssoOn() bool { return u.cfg.SSO.Provider != nil }

// redirectURL is where the provider sends the browser back: the plane's external URL, else its
// address as the browser reached it.
func (u *UI) redirectURL(r *http.Request) string {
	if u.cfg.Base != nil {
		return strings.TrimSuffix(u.cfg.Base.String(), "/") + Prefix + "/sso/callback"
	}
	scheme := "https"
	if r.TLS == nil { // --insecure-http, on loopback only
		scheme = "http"
	}
	return scheme + "://" + r.Host + Prefix + "/sso/callback"
}

// ssoStart sends the browser to the provider with a fresh state and PKCE verifier.
func (u *UI) ssoStart(w http.ResponseWriter, r *http.Request) {
	if !u.ssoOn() {
		u.fail(w, r, nil, noSSO())
		return
	}
	state, verifier := randomID(), oauth2.GenerateVerifier()
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: state + "." + verifier, Path: Prefix + "/sso", MaxAge: 600,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, u.cfg.SSO.Provider.Start(u.redirectURL(r), state, verifier), http.StatusSeeOther)
}

// ssoCallback takes the provider's answer: the state must be this browser's, the code is exchanged
// with the verifier, and the person's groups must map to a role. Then a session starts as for a token.
func (u *UI) ssoCallback(w http.ResponseWriter, r *http.Request) {
	if !u.ssoOn() {
		u.fail(w, r, nil, noSSO())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: Prefix + "/sso", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		u.signinForm(w, r, http.StatusUnauthorized, "The identity provider refused the sign-in: "+trimText(e+" "+q.Get("error_description"), 200))
		return
	}
	c, err := r.Cookie(ssoCookie)
	state, verifier, ok := strings.Cut(valueOr(c, err), ".")
	if !ok || q.Get("state") == "" || q.Get("state") != state {
		u.fail(w, r, nil, errcode.New(errcode.SSORefused, "the sign-in's state is not this browser's; start the sign-in again"))
		return
	}
	now := u.cfg.Now()
	id, refresh, err := u.cfg.SSO.Provider.Finish(r.Context(), u.redirectURL(r), q.Get("code"), verifier)
	if err != nil {
		audit.NoteCode(r.Context(), errcode.Code(err))
		u.cfg.Log.Info("ui single sign-on refused", "err", err, "address", clientAddr(r, u.cfg.TrustedProxies))
		u.signinForm(w, r, errcode.Status(errcode.Code(err)), messageOf(err))
		return
	}
	if refresh == "" {
		u.signinForm(w, r, http.StatusUnauthorized, "The identity provider gave no refresh token, so the plane could not check the sign-in again later; ask for the offline_access scope to be allowed.")
		return
	}
	s := &session{id: ssoSessionPrefix + randomID(), csrf: randomID(), expires: now.Add(SessionTTL)}
	hash := sessionHash(s.id)
	if _, err := u.cfg.SSO.Store.SSOSessionCreate(r.Context(), store.SSOSessionCreateParams{IDHash: hash, Subject: id.Subject, Name: id.Name,
		Role: store.Role(id.Role), CSRF: s.csrf, RefreshSealed: u.cfg.SSO.Key.Seal([]byte(refresh), sealContext(hash)),
		RefreshAt: now.Add(u.cfg.SSO.Provider.RefreshEvery()), ExpiresAt: s.expires, Now: now}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	who := id.Token()
	audit.NoteActor(r.Context(), who.ID, who.Name)
	u.cfg.Log.Info("ui session started", "user", id.Name, "role", id.Role, "via", "sso")
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.id, Path: Prefix, Expires: s.expires, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	// Not a redirect: the browser came here from the provider's site, and a browser does not send a
	// SameSite=Strict cookie on any step of a navigation another site started, so a 303 to the
	// overview landed on the sign-in page again (headless Chromium showed it; Go's cookie jar does not
	// know SameSite). A page of the plane's own that moves on starts a same-site navigation, which
	// carries the cookie. Rejected: a Lax session cookie, which would send it on every cross-site GET.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ssoContinuePage)
}

// ssoContinuePage moves a browser just signed in on to the overview: at once by its meta refresh, or by
// its link (a browser that refuses refreshes).
const ssoContinuePage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=` + Prefix + `/"><title>Signed in · Lexicon</title></head>
<body><p>Signed in. <a href="` + Prefix + `/" id="sso-continue">Continue to the overview</a>.</p></body></html>
`

// ssoViewer reads a single sign-on session, asking the provider again once its refresh is due: a
// person the provider no longer vouches for, or whose groups map to no role now, is signed out. The
// refresh is done by whichever replica serves the request that finds it due; two at once both ask,
// and the later write wins, which is harmless since both answers are the provider's.
func (u *UI) ssoViewer(ctx context.Context, cookie string) (viewer, error) {
	if !u.ssoOn() {
		return viewer{}, errcode.New(errcode.AuthSessionEnded, "single sign-on is off on this plane; sign in with a token")
	}
	hash := sessionHash(cookie)
	now := u.cfg.Now()
	st, err := u.cfg.SSO.Store.SSOSessionGet(ctx, store.SSOSessionGetParams{IDHash: hash, Now: now})
	if err != nil {
		return viewer{}, err
	}
	if !now.Before(st.RefreshAt) {
		if st, err = u.ssoRefresh(ctx, hash, st, now); err != nil {
			return viewer{}, err
		}
	}
	who := sso.Identity{Subject: st.Subject, Name: st.Name, Role: api.Role(st.Role)}.Token()
	return viewer{sess: &session{id: cookie, csrf: st.CSRF, expires: st.ExpiresAt}, tok: who}, nil
}

func (u *UI) ssoRefresh(ctx context.Context, hash string, st store.SSOSession, now time.Time) (store.SSOSession, error) {
	end := func(why error) (store.SSOSession, error) {
		u.cfg.Log.Info("ui session ended by the identity provider", "user", st.Name, "err", why)
		if err := u.cfg.SSO.Store.SSOSessionDelete(ctx, store.SSOSessionDeleteParams{IDHash: hash}); err != nil {
			return st, err
		}
		return st, errcode.New(errcode.AuthSessionEnded, "sign in again: %s", messageOf(why))
	}
	refresh, err := u.cfg.SSO.Key.Open(st.RefreshSealed, sealContext(hash))
	if err != nil {
		return end(errcode.New(errcode.SSORefused, "the session's refresh token does not open under this replica's master key"))
	}
	id, next, err := u.cfg.SSO.Provider.Refresh(ctx, string(refresh))
	if errcode.Has(err, errcode.SSORefused) || errcode.Has(err, errcode.SSONoRole) {
		return end(err)
	}
	if err != nil {
		return st, err
	}
	st.Name, st.Role, st.RefreshAt = id.Name, store.Role(id.Role), now.Add(u.cfg.SSO.Provider.RefreshEvery())
	st.RefreshSealed = u.cfg.SSO.Key.Seal([]byte(next), sealContext(hash))
	err = u.cfg.SSO.Store.SSOSessionRefresh(ctx, store.SSOSessionRefreshParams{IDHash: hash, Name: st.Name, Role: st.Role,
		RefreshSealed: st.RefreshSealed, RefreshAt: st.RefreshAt, Now: now})
	return st, err
}

func valueOr(c *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return c.Value
}

// messageOf is an error's message without its code, for a sign-in form.
func messageOf(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

func trimText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
