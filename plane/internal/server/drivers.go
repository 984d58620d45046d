package server

import (
	"bytes"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Body caps of the driver routes: an enable (a consent flag), an account (settings and a credential),
// and a reconcile of up to dns.MaxRecords records.
const (
	maxAccountBody   = 128 << 10
	maxEnableBody    = 4 << 10
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
	s.handle(r, api.DriversList, func(r *http.Request) (any, error) {
		return s.drivers().List(r.Context())
	})
	s.handle(r, api.DriversStatus, func(r *http.Request) (any, error) {
		return s.drivers().Status(r.Context())
	})
	s.handle(r, api.DriversAudit, func(r *http.Request) (any, error) {
		q, err := api.ParseDriversAuditQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		res, err := s.drivers().Audit(r.Context(), store.DriverCallListParams{Driver: q.Driver, Account: q.Account, Limit: q.Limit, Cursor: q.Cursor})
		return api.DriverCallList{Calls: apiconv.Each(res.Calls, apiconv.DriverCall), NextCursor: res.NextCursor}, err
	})
	s.handle(r, api.DriversEnable, s.driverEnable)
	s.handle(r, api.DriversSchema, func(r *http.Request) (any, error) {
		return s.drivers().ConfigSchema(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
	})
	s.handle(r, api.DriversDisable, func(r *http.Request) (any, error) {
		return s.drivers().Disable(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
	})

	s.handle(r, api.AccountsList, func(r *http.Request) (any, error) {
		q, err := api.ParseAccountsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		l, err := s.drivers().AccountList(r.Context(), q.Driver)
		return api.AccountList{Accounts: apiconv.Each(l, apiconv.Account)}, err
	})
	s.handle(r, api.AccountsAdd, s.accountAdd)
	s.handle(r, api.AccountsRemove, func(r *http.Request) (any, error) {
		a, err := s.drivers().AccountRemove(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"))
		if err != nil {
			return nil, err
		}
		return apiconv.Account(a), nil
	})

	s.handle(r, api.DNSZones, func(r *http.Request) (any, error) {
		z, err := s.drivers().DNSZones(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"))
		return api.ZoneList{Zones: drivers.ZonesToAPI(z)}, err
	})
	s.handle(r, api.DNSRecords, func(r *http.Request) (any, error) {
		recs, err := s.drivers().DNSRecords(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), chi.URLParam(r, "zone"))
		return api.RecordList{Records: drivers.RecordsToAPI(recs)}, err
	})
	s.handle(r, api.DNSReconcile, s.dnsReconcile)

	s.handle(r, api.CloudRegions, func(r *http.Request) (any, error) {
		l, err := s.drivers().CloudRegions(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"))
		return api.RegionList{Regions: drivers.RegionsToAPI(l)}, err
	})
	s.handle(r, api.CloudTypes, func(r *http.Request) (any, error) {
		l, err := s.drivers().CloudInstanceTypes(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), chi.URLParam(r, "region"))
		return api.TypeList{Types: drivers.TypesToAPI(l)}, err
	})
	s.handle(r, api.CloudInstances, func(r *http.Request) (any, error) {
		q, err := api.ParseCloudInstancesQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		p, err := s.drivers().CloudInstances(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"),
			cloud.ListRequest{PageSize: q.PageSize, PageToken: q.PageToken})
		return drivers.PageToAPI(p), err
	})
	s.cloudRoutesOn(r)
}

// drivers returns the driver manager; needDrivers has checked there is one.
func (s *Server) drivers() *drivers.Manager { return s.cfg.Drivers }

// accountAdd takes the credential from the request body only; it is wrapped as a driver.Secret at once
// and sealed by the manager before it reaches the store. The answer is the account without it.
// driverEnable enables a driver; a body is optional (older clients send none) and carries the admin's
// consent to run it unconfined.
func (s *Server) driverEnable(r *http.Request) (any, error) {
	body, err := readBody(r, maxEnableBody)
	if err != nil {
		return nil, err
	}
	var req api.DriverEnable
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return nil, err
		}
	}
	return s.drivers().Enable(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"), req.Unconfined)
}

func (s *Server) accountAdd(r *http.Request) (any, error) {
	var req api.AccountAdd
	if err := readJSON(r, maxAccountBody, &req); err != nil {
		return nil, err
	}
	a, err := s.drivers().AccountAdd(r.Context(), tokenFrom(r.Context()).Name, drivers.AccountAddRequest{
		Driver: req.Driver, Name: req.Name, Settings: req.Settings, Credential: driver.NewSecret(req.Credential), Test: req.Test,
	})
	if err != nil {
		return nil, err
	}
	return apiconv.Account(a), nil
}

func (s *Server) dnsReconcile(r *http.Request) (any, error) {
	var req api.Reconcile
	if err := readJSON(r, maxReconcileBody, &req); err != nil {
		return nil, err
	}
	want, err := drivers.RecordsFromAPI(req.Records)
	if err != nil {
		return nil, err
	}
	account := chi.URLParam(r, "account")
	res, err := s.drivers().DNSReconcile(r.Context(), tokenFrom(r.Context()).Name, account, chi.URLParam(r, "zone"), want, req.DryRun)
	if err != nil {
		return nil, err
	}
	s.log.Info("dns reconcile", "account", account, "zone", res.Zone, "created", len(res.Created), "present", len(res.Present),
		"conflicts", len(res.Conflicts), "dry_run", req.DryRun, "by", tokenFrom(r.Context()).Name)
	return drivers.ReportToAPI(account, req.DryRun, res), nil
}
