// Package ui is the plane's admin web UI: server-rendered HTML pages under /ui/ on the plane's own
// listener, for people who would rather look at the fleet than script it. It holds no rules of its own:
// every page reads and changes the fleet by calling the rooms' Go APIs, as the admin API's handlers
// do, after the role check of the API route it stands for, as the session's token. What it adds is what
// a browser needs: sign-in with an admin token exchanged for a session kept in the store (so every
// replica accepts it), CSRF tokens on every form, and the security headers (a strict
// Content-Security-Policy, no framing, no caching).
package ui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/joins"
	"github.com/lexicon-fleet/lexicon/plane/internal/machines"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/schedules"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Prefix is where the UI is served.
const Prefix = "/ui"

// SessionTTL is how long a session lasts after sign-in; it is not extended by use, so a stolen cookie
// is worth at most this long.
const SessionTTL = 8 * time.Hour

// Cookie names. The session cookie is HttpOnly, Secure and SameSite=Strict; the pre-session cookie
// carries the sign-in form's CSRF token (double submit), since there is no session yet to hold one.
const (
	sessionCookie = "lexicon_session"
	preCookie     = "lexicon_signin"
)

// CSP is the Content-Security-Policy of every response: nothing inline, nothing from elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Store is what the UI keeps of its own: the sessions of signed-in browsers, each with its token.
type Store interface {
	UISessionCreate(ctx context.Context, p store.UISessionCreateParams) (store.UISession, error)
	UISessionGet(ctx context.Context, p store.UISessionGetParams) (store.UISession, error)
	UISessionDelete(ctx context.Context, p store.UISessionDeleteParams) error
}

// Config is what the UI needs from the plane.
type Config struct {
	// Store keeps the sessions; a session's token is read with it on every request, so a revoked token
	// ends its sessions at once.
	Store Store
	// The rooms the pages call, as the admin API's handlers do.
	Tokens    *tokens.Room
	Joins     *joins.Room
	Nodes     *nodes.Room
	Jobs      *jobs.Room
	Releases  *releases.Room
	Rollouts  *rollouts.Room
	Schedules *schedules.Room
	Security  *security.Room
	Roles     *roles.Room
	Incidents *incidents.Room
	Provision *provision.Room
	Drivers   *drivers.Room
	Health    *health.Room
	Machines  *machines.Room
	Backups   *backups.Room
	// Audit records every form the UI takes (sign-in and sign-out too); nil records none.
	Audit *audit.Room
	Log   *slog.Logger
	Now   func() time.Time
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is believed: a sign-in through one
	// is counted under the client the header names (clientAddr), not under the proxy. Empty: the
	// connection's address is the client's, and the header is ignored.
	TrustedProxies []netip.Prefix
	// SSO signs people in through an OpenID Connect provider beside tokens; its zero value offers none.
	SSO SSO
	// Base is the plane's external URL, when it sits behind a proxy (the provider redirects back to
	// it); nil derives it per request.
	Base *url.URL
}

// UI serves the pages.
type UI struct {
	cfg    Config
	pages  map[string]*template.Template
	limits *signinLimiter
}

// session is a signed-in browser: the store keeps it (keyed by the cookie's sha256), so any replica
// accepts it, and reads its token with it on every request.
type session struct {
	id      string // the cookie's value: the secret, never stored
	csrf    string
	expires time.Time
}

// New makes the UI; it panics if its embedded templates do not parse, which a test catches.
func New(cfg Config) *UI {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u := &UI{cfg: cfg, pages: map[string]*template.Template{}, limits: newSigninLimiter()}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || base == "partials" {
			continue
		}
		u.pages[base] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n))
	}
	return u
}

// Handler returns the UI's routes, to be mounted at Prefix.
func (u *UI) Handler() http.Handler {
	r := chi.NewRouter()
	// Pages, styles and script are text that compresses several times over; the job stream's
	// text/event-stream is not in the middleware's list and is sent as it is written.
	r.Use(headers, middleware.Compress(5))
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", cacheStatic(http.FileServer(http.FS(static)))))
	r.Get("/signin", u.signinPage)
	r.With(u.audited).Post("/signin", u.signin)
	r.Get("/sso/start", u.ssoStart)
	r.With(u.audited).Get("/sso/callback", u.ssoCallback)
	r.Group(func(r chi.Router) {
		r.Use(u.authenticate, noStore, u.audited)
		r.Post("/signout", u.signout)
		r.Get("/", u.overview)
		r.Get("/joins", u.joins)
		r.Post("/joins/{id}/approve", u.joinApprove)
		r.Post("/joins/{id}/reject", u.joinReject)
		r.Get("/nodes", u.nodes)
		r.Get("/nodes/install-command", u.installPage)
		r.Post("/nodes/install-command", u.installMake)
		r.Get("/nodes/{id}", u.node)
		r.Get("/run", u.runPage)
		r.Post("/run", u.run)
		r.Post("/batches", u.batchStart)
		r.Get("/batches", u.batches)
		r.Get("/batches/{id}", u.batch)
		r.Get("/jobs", u.jobs)
		r.Get("/jobs/{id}", u.job)
		r.Get("/jobs/{id}/events", u.jobEvents)
		r.Post("/jobs/{id}/cancel", u.jobCancel)
		r.Post("/jobs/{id}/mark-failed", u.jobMarkFailed)
		r.Get("/releases", u.releases)
		r.Post("/releases", u.releaseUpload)
		r.Get("/releases/diff", u.releaseDiff)
		r.Get("/releases/{seq}", u.release)
		r.Get("/rollouts", u.rollouts)
		r.Post("/rollouts", u.rolloutStart)
		r.Post("/fleet/patch", u.fleetPatch)
		r.Get("/rollouts/{id}", u.rollout)
		r.Get("/roles", u.roles)
		r.Post("/roles", u.roleCreate)
		r.Get("/roles/{name}", u.role)
		r.Post("/roles/{name}/edit", u.roleEdit)
		r.Post("/roles/{name}/assign", u.roleAssign)
		r.Post("/roles/{name}/unassign", u.roleUnassign)
		r.Post("/roles/{name}/plan", u.rolePlan)
		r.Post("/roles/{name}/apply", u.roleApply)
		r.Get("/nodes/{id}/footprint", u.nodeFootprint)
		r.Post("/rollouts/{id}/pause", u.rolloutMove(api.RolloutsPause, u.cfg.Rollouts.Pause))
		r.Post("/rollouts/{id}/resume", u.rolloutMove(api.RolloutsResume, u.cfg.Rollouts.Resume))
		r.Post("/rollouts/{id}/abort", u.rolloutMove(api.RolloutsAbort, u.cfg.Rollouts.Abort))
		r.Post("/rollouts/{id}/revert", u.rolloutMove(api.RolloutsRevert, u.cfg.Rollouts.Revert))
		r.Get("/machines", u.machines)
		r.Post("/machines", u.machineAdd)
		r.Post("/machines/{id}/edit", u.machineEdit)
		r.Post("/machines/{id}/confirm", u.machineMove(api.MachinesConfirm, u.machineConfirm))
		r.Post("/machines/{id}/remove", u.machineMove(api.MachinesRemove, u.machineRemove))
		r.Get("/security", u.security)
		// The path is the API route's, so the audit trail names the form as the route it calls.
		r.Post("/fleet/security/critical", u.securityCritical)
		r.Get("/schedules", u.schedules)
		r.Post("/schedules", u.scheduleCreate)
		r.Get("/schedules/{id}", u.schedule)
		r.Post("/schedules/{id}/edit", u.scheduleEdit)
		r.Post("/schedules/{id}/pause", u.scheduleMove(api.SchedulesPause, u.cfg.Schedules.Pause))
		r.Post("/schedules/{id}/resume", u.scheduleMove(api.SchedulesResume, u.cfg.Schedules.Resume))
		r.Post("/schedules/{id}/delete", u.scheduleMove(api.SchedulesDelete, u.cfg.Schedules.Delete))
		r.Get("/provisionings", u.provisionings)
		r.Post("/provisionings", u.provisionStart)
		r.Get("/provisionings/{id}", u.provisioning)
		r.Get("/cloud/{account}", u.cloudInstances)
		r.Post("/cloud/{account}/instances/{id}/power-on", u.cloudMove(api.CloudPowerOn, accepted(u.cfg.Drivers.PowerOn)))
		r.Post("/cloud/{account}/instances/{id}/power-off", u.cloudMove(api.CloudPowerOff, accepted(u.cfg.Drivers.PowerOff)))
		r.Post("/cloud/{account}/instances/{id}/reboot", u.cloudMove(api.CloudReboot, accepted(u.cfg.Drivers.Reboot)))
		r.Post("/cloud/{account}/instances/{id}/delete", u.cloudMove(api.CloudDelete, u.cloudDelete))
		r.Get("/plane", u.planeStatus)
		r.Post("/plane/replicas/{id}/forget", u.replicaForget)
		r.Get("/drivers", u.drivers)
		r.Get("/drivers/audit", u.driverAudit)
		r.Post("/drivers/{name}/enable", u.driverEnable)
		r.Post("/drivers/{name}/disable", u.driverDisable)
		r.Get("/drivers/{name}/accounts/new", u.accountNew)
		r.Post("/accounts", u.accountAdd)
		r.Post("/accounts/{name}/remove", u.accountRemove)
		r.Get("/audit", u.trail)
		r.Get("/tokens", u.tokens)
		r.Post("/tokens", u.tokenCreate)
		r.Post("/tokens/{id}/revoke", u.tokenRevoke)
		r.Get("/incidents", u.incidents)
		r.Get("/incidents/{id}", u.incident)
		r.Post("/incidents/{id}/triage", u.incidentTriage)
		r.Post("/incidents/{id}/notes", u.incidentNote)
		r.Get("/backups", u.backups)
		r.Post("/backups/targets", u.backupTargetAdd)
		r.Post("/backups/targets/{name}/remove", u.backupTargetRemove)
		r.Post("/backups/targets/{name}/check", u.backupTargetCheck)
		r.Post("/backups/policy", u.backupPolicySet)
		r.Get("/backups/nodes/{id}", u.backupNode)
		r.Post("/backups/nodes/{id}/policy", u.backupPolicySet)
		r.Post("/backups/nodes/{id}/policy/clear", u.backupPolicyClear)
		r.Post("/backups/nodes/{id}/restore", u.backupRestore)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		u.fail(w, r, nil, errcode.New(errcode.RouteNotFound, "no page %s", r.URL.Path))
	})
	return r
}

// headers sets what every response carries, before anything else can answer.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// noStore keeps pages with fleet data out of every cache.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// cacheStatic lets a browser keep a static file for a year when it is asked for by its fingerprint
// (the ?v= staticURL gives, which changes with the file's bytes); asked for otherwise, the file is
// checked again on every use, so a page never pairs with a stale stylesheet.
func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("v"); v != "" && v == staticSums[strings.TrimPrefix(r.URL.Path, "/")] {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		next.ServeHTTP(w, r)
	})
}

// staticSums are the static files' fingerprints (the first 16 hex digits of their sha256), by name.
var staticSums = func() map[string]string {
	sums := map[string]string{}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(staticFS, "static/"+e.Name())
		if err != nil {
			panic(err)
		}
		h := sha256.Sum256(data)
		sums[e.Name()] = hex.EncodeToString(h[:8])
	}
	return sums
}()

// staticURL is a static file's address with its fingerprint, for the templates.
func staticURL(name string) string {
	sum, ok := staticSums[name]
	if !ok {
		panic("ui: no static file " + name)
	}
	return Prefix + "/static/" + name + "?v=" + sum
}

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

type ctxKey struct{}

// viewer is the signed-in session and its token, as a page sees them.
type viewer struct {
	sess *session
	tok  api.Token
}

func from(r *http.Request) viewer {
	v, _ := r.Context().Value(ctxKey{}).(viewer)
	return v
}

// run calls a room's method f with arg as the signed-in token, after the role check of the route rt
// it stands for: a page runs the very rules of the API, without a trip through JSON.
func run[A, T any](u *UI, r *http.Request, rt api.Route, f func(context.Context, api.Token, A) (T, error), arg A) (T, error) {
	who, err := u.may(r, rt)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(r.Context(), who, arg)
}

// may returns the signed-in token, refused (auth.forbidden) below the role the API's route table
// gives rt: a page calls the room of the route it stands for, after the same role check.
func (u *UI) may(r *http.Request, rt api.Route) (api.Token, error) {
	who := from(r).tok
	return who, tokens.Need(who, rt.Role)
}

// authenticate finds the session in the store with its token: an unknown or expired session, or a
// revoked token, sends the browser to sign in again. A POST must carry the session's CSRF token.
func (u *UI) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil || c.Value == "" {
			u.toSignin(w, r)
			return
		}
		v, err := u.viewerOf(r.Context(), c.Value)
		if errcode.Has(err, errcode.AuthSessionEnded) || errcode.Has(err, errcode.TokenRevoked) {
			u.toSignin(w, r)
			return
		}
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
		if r.Method == http.MethodPost {
			// A form is small; only a release upload is big, and never bigger than the API takes.
			limit := int64(1 << 20)
			if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
				limit = api.MaxReleaseUpload + 1<<20
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			err := r.ParseForm()
			if err == nil && limit > 1<<20 {
				err = r.ParseMultipartForm(32 << 20) // what is over this goes to temporary files
			}
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				u.fail(w, r, &v, errcode.New(errcode.RequestTooLarge, "the form is over %d bytes", limit))
				return
			}
			if err != nil {
				u.fail(w, r, &v, errcode.Wrap(err, errcode.RequestMalformed, "the form could not be read"))
				return
			}
			if !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(v.sess.csrf)) != 1 {
				u.fail(w, r, &v, errcode.New(errcode.AuthCSRF, "the form's CSRF token is missing or not this session's; reload the page and try again"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// viewerOf reads the session a cookie opens: a token's, or a person's signed in through single sign-on.
func (u *UI) viewerOf(ctx context.Context, cookie string) (viewer, error) {
	if strings.HasPrefix(cookie, ssoSessionPrefix) {
		return u.ssoViewer(ctx, cookie)
	}
	st, err := u.cfg.Store.UISessionGet(ctx, store.UISessionGetParams{IDHash: sessionHash(cookie), Now: u.cfg.Now()})
	if err != nil {
		return viewer{}, err
	}
	return viewer{sess: &session{id: cookie, csrf: st.CSRF, expires: st.ExpiresAt}, tok: apiconv.Token(st.Token)}, nil
}

// endSession deletes the session a cookie opens, from the table that holds it.
func (u *UI) endSession(ctx context.Context, cookie string) error {
	if strings.HasPrefix(cookie, ssoSessionPrefix) {
		if !u.ssoOn() {
			return nil
		}
		return u.cfg.SSO.Store.SSOSessionDelete(ctx, store.SSOSessionDeleteParams{IDHash: sessionHash(cookie)})
	}
	return u.cfg.Store.UISessionDelete(ctx, store.UISessionDeleteParams{IDHash: sessionHash(cookie)})
}

// recheck reads the request's session again from the store: a long-lived response (the job stream)
// holds what authenticate read at its start, and must stop serving once the session or its token ends.
// Any failure ends it: a store that cannot say the session is alive does not keep it alive.
func (u *UI) recheck(r *http.Request) error {
	_, err := u.viewerOf(r.Context(), from(r).sess.id)
	switch {
	case err == nil, errcode.Has(err, errcode.AuthSessionEnded):
		return err
	case errcode.Has(err, errcode.TokenRevoked):
		return errcode.New(errcode.AuthSessionEnded, "sign in again: the session's token was revoked")
	default:
		u.cfg.Log.Error("ui session recheck failed", "err", err)
		return errcode.New(errcode.InternalError, "the session could not be checked; the plane's log has the cause")
	}
}

// sameOrigin refuses a request a browser says came from another site; browsers that send neither
// header are left to the CSRF token.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		ou, err := url.Parse(o)
		if err != nil || ou.Host != r.Host {
			return false
		}
	}
	return true
}

// sessionHash is how the store keys a session: the sha256 of the cookie's value, so that reading the
// store never yields a cookie that would open a session.
func sessionHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

func (u *UI) toSignin(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	if r.Method != http.MethodGet {
		u.fail(w, r, nil, errcode.New(errcode.AuthRequired, "sign in again: the session ended"))
		return
	}
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

func (u *UI) signinPage(w http.ResponseWriter, r *http.Request) {
	u.signinForm(w, r, http.StatusOK, "")
}

func (u *UI) signinForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	pre := randomID()
	http.SetCookie(w, &http.Cookie{Name: preCookie, Value: pre, Path: Prefix + "/signin", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode, MaxAge: 600})
	u.render(w, r, status, "signin", nil, map[string]any{"CSRF": pre, "Error": msg, "SSO": u.ssoOn()})
}

// signin exchanges an admin token for a session. The token is hashed at once and the text dropped.
// A client address (clientAddr) that failed too often is refused before its token is looked at, with
// auth.signin_limited, until its allowance refills.
func (u *UI) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, SignInMaxBody)
	err := r.ParseForm()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		u.fail(w, r, nil, errcode.New(errcode.RequestTooLarge, "the sign-in form is over %d bytes", SignInMaxBody).With(errcode.DetailCap, SignInMaxBody))
		return
	}
	if err != nil {
		u.signinForm(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := r.Cookie(preCookie)
	if err != nil || !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		u.fail(w, r, nil, errcode.New(errcode.AuthCSRF, "the sign-in form's CSRF token is missing or wrong; reload the page and try again"))
		return
	}
	addr := clientAddr(r, u.cfg.TrustedProxies)
	now := u.cfg.Now()
	if wait := u.limits.take(addr, now); wait > 0 {
		e := errcode.New(errcode.AuthSignInLimited, "too many failed sign-ins from %s; try again in %s", addr, wait.Round(time.Second)).
			With(errcode.DetailRetryAfterMS, wait.Milliseconds())
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		u.cfg.Log.Warn("ui sign-in refused: too many failures", "address", addr, "peer", remoteHost(r))
		audit.NoteCode(r.Context(), e.Code)
		u.signinForm(w, r, errcode.Status(e.Code), e.Code+": "+e.Message)
		return
	}
	raw := strings.TrimSpace(r.PostFormValue("token"))
	tok, err := u.cfg.Tokens.Authenticate(r.Context(), raw)
	if errcode.Has(err, errcode.AuthRequired) {
		u.cfg.Log.Info("ui sign-in failed", "address", addr, "peer", remoteHost(r))
		audit.NoteCode(r.Context(), errcode.AuthRequired)
		u.signinForm(w, r, http.StatusUnauthorized, "That token is unknown or revoked.")
		return
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.limits.refund(addr, now)
	audit.NoteActor(r.Context(), tok.ID, tok.Name)
	s := &session{id: randomID(), csrf: randomID(), expires: now.Add(SessionTTL)}
	if _, err := u.cfg.Store.UISessionCreate(r.Context(), store.UISessionCreateParams{IDHash: sessionHash(s.id), TokenID: tok.ID, CSRF: s.csrf,
		ExpiresAt: s.expires, Now: now}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.cfg.Log.Info("ui session started", "token", tok.Name, "role", tok.Role)
	http.SetCookie(w, &http.Cookie{Name: preCookie, Value: "", Path: Prefix + "/signin", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.id, Path: Prefix, Expires: s.expires, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (u *UI) signout(w http.ResponseWriter, r *http.Request) {
	v := from(r)
	if err := u.endSession(r.Context(), v.sess.id); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.cfg.Log.Info("ui session ended", "token", v.tok.Name)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

// page is what every page's template gets.
type page struct {
	Title  string
	Who    api.Token
	CSRF   string
	Flash  string
	Data   any
	Signed bool
}

// can reports whether the signed-in token covers role: the templates show a change button only then.
func (p page) Can(role string) bool { return p.Who.Role.Covers(api.Role(role)) }

func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, v *viewer, data any) {
	p := page{Title: name, Data: data}
	if v != nil && v.sess != nil {
		p.Signed, p.CSRF = true, v.sess.csrf
		p.Who = api.Token{ID: v.tok.ID, Name: v.tok.Name, Role: v.tok.Role}
	}
	var buf bytes.Buffer
	t := u.pages[name]
	if t == nil {
		u.cfg.Log.Error("ui template missing", "page", name)
		http.Error(w, "page missing", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(&buf, p); err != nil {
		u.cfg.Log.Error("ui render failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; the plane's log has the cause", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// page renders a page for the signed-in viewer.
func (u *UI) page(w http.ResponseWriter, r *http.Request, name string, data any) {
	v := from(r)
	u.render(w, r, http.StatusOK, name, &v, data)
}

// fail renders an error page with the error's code and the status the codes table gives it; errors
// without a code are the plane's own and are logged, not shown.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	var e *errcode.Error
	if !errors.As(err, &e) {
		u.cfg.Log.Error("ui request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = errcode.New(errcode.InternalError, "the plane failed; its log has the cause")
	}
	if v == nil {
		if vv := from(r); vv.sess != nil {
			v = &vv
		}
	}
	audit.NoteCode(r.Context(), e.Code)
	w.Header().Set("Cache-Control", "no-store")
	u.render(w, r, errcode.Status(e.Code), "error", v, map[string]any{"Code": e.Code, "Message": e.Message})
}
