package server

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// Body caps of the driver routes: an enable (a consent flag), an account (settings and a credential),
// a reconcile of up to dns.MaxRecords records, a cloud create (up to cloud.MaxUserDataLen of user data
// and cloud.MaxSSHKeys keys), and the others a few names.
const (
	maxAccountBody     = 128 << 10
	maxEnableBody      = 4 << 10
	maxReconcileBody   = 4 << 20
	maxCloudCreateBody = 64 << 10
	maxCloudSmallBody  = 4 << 10
)

// driverRoutes serves the drivers room: drivers, accounts, their audit log, and the DNS and cloud calls
// made through them. A plane without drivers refuses every one of them (driver.unavailable) before
// anything else.
func (s *Server) driverRoutes(root chi.Router) {
	root.Group(func(r chi.Router) {
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := s.cfg.Drivers.Available(); err != nil {
					s.writeError(w, r, err)
					return
				}
				next.ServeHTTP(w, r)
			})
		})
		s.driverRoutesOn(r)
		s.cloudRoutesOn(r)
	})
}

func (s *Server) driverRoutesOn(r chi.Router) {
	d := s.cfg.Drivers
	s.handle(r, api.DriversList, func(r *http.Request) (any, error) { return d.List(r.Context(), tokenFrom(r.Context())) })
	s.handle(r, api.DriversStatus, func(r *http.Request) (any, error) { return d.Status(r.Context(), tokenFrom(r.Context())) })
	s.handle(r, api.DriversAudit, func(r *http.Request) (any, error) {
		q, err := api.ParseDriversAuditQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return d.Audit(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.DriversEnable, func(r *http.Request) (any, error) {
		// The body is optional: older clients send none.
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
		return d.Enable(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.DriversSchema, byName(d.Schema))
	s.handle(r, api.DriversDisable, byName(d.Disable))

	s.handle(r, api.AccountsList, func(r *http.Request) (any, error) {
		q, err := api.ParseAccountsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return d.Accounts(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.AccountsAdd, func(r *http.Request) (any, error) {
		var req api.AccountAdd
		if err := readJSON(r, maxAccountBody, &req); err != nil {
			return nil, err
		}
		return d.AddAccount(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.AccountsRemove, byName(d.RemoveAccount))
	s.handle(r, api.AccountsSetTest, func(r *http.Request) (any, error) {
		var req api.AccountTest
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		return d.MarkTest(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})

	s.handle(r, api.DNSZones, func(r *http.Request) (any, error) {
		return d.Zones(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"))
	})
	s.handle(r, api.DNSRecords, func(r *http.Request) (any, error) {
		return d.Records(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), chi.URLParam(r, "zone"))
	})
	s.handle(r, api.DNSReconcile, func(r *http.Request) (any, error) {
		var req api.Reconcile
		if err := readJSON(r, maxReconcileBody, &req); err != nil {
			return nil, err
		}
		return d.Reconcile(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), chi.URLParam(r, "zone"), req)
	})
}

// cloudRoutesOn serves the cloud calls.
func (s *Server) cloudRoutesOn(r chi.Router) {
	d := s.cfg.Drivers
	s.handle(r, api.CloudRegions, func(r *http.Request) (any, error) {
		return d.Regions(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"))
	})
	s.handle(r, api.CloudTypes, func(r *http.Request) (any, error) {
		return d.Types(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), chi.URLParam(r, "region"))
	})
	s.handle(r, api.CloudInstances, func(r *http.Request) (any, error) {
		q, err := api.ParseCloudInstancesQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return d.Instances(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), q)
	})
	s.handle(r, api.CloudCreate, func(r *http.Request) (any, error) {
		var req api.CloudCreateRequest
		if err := readJSON(r, maxCloudCreateBody, &req); err != nil {
			return nil, err
		}
		return d.Create(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), req)
	})
	s.handle(r, api.CloudGet, byInstance(d.Instance))
	s.handle(r, api.CloudDelete, func(r *http.Request) (any, error) {
		var req api.CloudDeleteRequest
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		return d.Delete(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), instanceParam(r), req)
	})
	s.handle(r, api.CloudPowerOn, byInstance(d.PowerOn))
	s.handle(r, api.CloudPowerOff, byInstance(d.PowerOff))
	s.handle(r, api.CloudReboot, byInstance(d.Reboot))
	s.handle(r, api.CloudReverseDNS, func(r *http.Request) (any, error) {
		var req api.ReverseDNSRequest
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		return d.ReverseDNS(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), instanceParam(r), req)
	})
	s.handle(r, api.CloudTransfer, byInstance(d.Transfer))
	s.handle(r, api.CloudSwapIPv4, func(r *http.Request) (any, error) {
		var req api.SwapIPv4Request
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		return d.SwapIPv4(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), req)
	})
	s.handle(r, api.CloudAccount, func(r *http.Request) (any, error) {
		return d.Account(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"))
	})
}

// byName adapts a room's method on the route's {name}.
func byName[T any](f func(context.Context, api.Token, string) (T, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		return f(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"))
	}
}

// byInstance adapts a room's method on the route's {account} and {id}.
func byInstance[T any](f func(context.Context, api.Token, string, string) (T, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		return f(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "account"), instanceParam(r))
	}
}

// instanceParam is the {id} segment as the client escaped it with Route.Path: provider ids may hold a
// slash, which travels as %2F inside the one segment.
func instanceParam(r *http.Request) string {
	id := chi.URLParam(r, "id")
	if u, err := url.PathUnescape(id); err == nil {
		return u
	}
	return id
}
