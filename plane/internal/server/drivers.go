package server

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Body caps of the driver routes: an account (settings and a credential), and a reconcile of up to
// dns.MaxRecords records.
const (
	maxAccountBody   = 128 << 10
	maxReconcileBody = 4 << 20
)

// driverRoutes serves drivers, accounts, their audit log, and the DNS and cloud calls made through
// them. Reading what is configured needs viewer; a call that reaches a provider with a credential needs
// operator (reconcile only adds records); enabling drivers and managing accounts needs admin.
func (s *Server) driverRoutes(root chi.Router) {
	root.Group(func(r chi.Router) {
		r.Use(s.needDrivers)
		s.driverRoutesOn(r)
	})
}

// needDrivers refuses the driver routes of a plane built without a driver manager.
func (s *Server) needDrivers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Drivers == nil {
			s.writeError(w, r, errcode.New(errcode.DriverUnavailable, "this plane runs without drivers"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) driverRoutesOn(r chi.Router) {
	r.Get("/drivers", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		l, err := s.drivers().List(r.Context())
		return http.StatusOK, l, err
	}))
	r.Get("/drivers/status", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		l, err := s.drivers().Status(r.Context())
		return http.StatusOK, l, err
	}))
	r.Get("/drivers/audit", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		q := r.URL.Query()
		res, err := s.drivers().Audit(r.Context(), store.DriverCallListParams{Driver: q.Get("driver"), Account: q.Get("account"),
			Limit: limitParam(r), Cursor: q.Get("cursor")})
		return http.StatusOK, res, err
	}))
	r.Post("/drivers/{name}/enable", s.with(store.RoleAdmin, func(r *http.Request) (int, any, error) {
		d, err := s.drivers().Enable(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
		return http.StatusOK, d, err
	}))
	r.Post("/drivers/{name}/disable", s.with(store.RoleAdmin, func(r *http.Request) (int, any, error) {
		d, err := s.drivers().Disable(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
		return http.StatusOK, d, err
	}))

	r.Get("/accounts", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		l, err := s.drivers().AccountList(r.Context(), r.URL.Query().Get("driver"))
		return http.StatusOK, map[string]any{"accounts": nonNil(l)}, err
	}))
	r.Post("/accounts", s.with(store.RoleAdmin, s.accountAdd))
	r.Post("/accounts/{name}/remove", s.with(store.RoleAdmin, func(r *http.Request) (int, any, error) {
		a, err := s.drivers().AccountRemove(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
		return http.StatusOK, a, err
	}))

	r.Get("/dns/{account}/zones", s.with(store.RoleOperator, func(r *http.Request) (int, any, error) {
		z, err := s.drivers().DNSZones(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"))
		return http.StatusOK, map[string]any{"zones": drivers.ZonesToWire(z)}, err
	}))
	r.Get("/dns/{account}/zones/{zone}/records", s.with(store.RoleOperator, func(r *http.Request) (int, any, error) {
		recs, err := s.drivers().DNSRecords(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), chi.URLParam(r, "zone"))
		return http.StatusOK, map[string]any{"records": drivers.RecordsToWire(recs)}, err
	}))
	r.Post("/dns/{account}/zones/{zone}/reconcile", s.with(store.RoleOperator, s.dnsReconcile))

	r.Get("/cloud/{account}/regions", s.with(store.RoleOperator, func(r *http.Request) (int, any, error) {
		l, err := s.drivers().CloudRegions(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"))
		return http.StatusOK, map[string]any{"regions": drivers.RegionsToWire(l)}, err
	}))
	r.Get("/cloud/{account}/regions/{region}/types", s.with(store.RoleOperator, func(r *http.Request) (int, any, error) {
		l, err := s.drivers().CloudInstanceTypes(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), chi.URLParam(r, "region"))
		return http.StatusOK, map[string]any{"types": drivers.TypesToWire(l)}, err
	}))
	r.Get("/cloud/{account}/instances", s.with(store.RoleOperator, func(r *http.Request) (int, any, error) {
		q := r.URL.Query()
		req := cloud.ListRequest{PageToken: q.Get("page_token")}
		if v := q.Get("page_size"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, nil, errcode.New(errcode.RequestMalformed, "page_size %q is not a number", v).With(errcode.DetailField, "page_size")
			}
			req.PageSize = n
		}
		p, err := s.drivers().CloudInstances(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), req)
		return http.StatusOK, drivers.PageToWire(p), err
	}))
}

// drivers returns the driver manager; needDrivers has checked there is one.
func (s *Server) drivers() *drivers.Manager { return s.cfg.Drivers }

// accountAdd takes the credential from the request body only; it is wrapped as a driver.Secret at once
// and sealed by the manager before it reaches the store. The answer is the account without it.
func (s *Server) accountAdd(r *http.Request) (int, any, error) {
	body, err := readBody(r, maxAccountBody)
	if err != nil {
		return 0, nil, err
	}
	var req wire.AccountAdd
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	a, err := s.drivers().AccountAdd(r.Context(), tokenFrom(r.Context()).Name, drivers.AccountAddRequest{
		Driver: req.Driver, Name: req.Name, Settings: req.Settings, Credential: driver.NewSecret(req.Credential),
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, a, nil
}

func (s *Server) dnsReconcile(r *http.Request) (int, any, error) {
	body, err := readBody(r, maxReconcileBody)
	if err != nil {
		return 0, nil, err
	}
	var req wire.Reconcile
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	want, err := drivers.RecordsFromWire(req.Records)
	if err != nil {
		return 0, nil, err
	}
	account := chi.URLParam(r, "account")
	res, err := s.drivers().DNSReconcile(r.Context(), tokenFrom(r.Context()).Name, account, chi.URLParam(r, "zone"), want, req.DryRun)
	if err != nil {
		return 0, nil, err
	}
	s.log.Info("dns reconcile", "account", account, "zone", res.Zone, "created", len(res.Created), "present", len(res.Present),
		"conflicts", len(res.Conflicts), "dry_run", req.DryRun, "by", tokenFrom(r.Context()).Name)
	return http.StatusOK, drivers.ReportToWire(account, req.DryRun, res), nil
}
