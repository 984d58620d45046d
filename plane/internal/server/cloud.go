package server

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Body caps of the cloud routes: a create carries up to cloud.MaxUserDataLen of user data and
// cloud.MaxSSHKeys keys; the others a few names.
const (
	maxCloudCreateBody = 64 << 10
	maxCloudSmallBody  = 4 << 10
)

// cloudRoutesOn serves the cloud operations that change or read one instance, and the test mark of
// accounts. Every call is audited by the driver manager with the token's name.
func (s *Server) cloudRoutesOn(r chi.Router) {
	s.handle(r, api.AccountsSetTest, func(r *http.Request) (any, error) {
		var req api.AccountTest
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		a, err := s.drivers().AccountSetTest(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "name"), req.Test)
		if err != nil {
			return nil, err
		}
		return apiconv.Account(a), nil
	})
	s.handle(r, api.CloudCreate, s.cloudCreate)
	s.handle(r, api.CloudGet, func(r *http.Request) (any, error) {
		in, err := s.drivers().CloudGet(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"), instanceParam(r))
		if err != nil {
			return nil, err
		}
		return drivers.InstanceToAPI(in), nil
	})
	s.handle(r, api.CloudDelete, s.cloudDelete)
	for _, a := range []struct {
		rt   api.Route
		op   string
		call func(*drivers.Manager, context.Context, string, string, string) error
	}{
		{api.CloudPowerOn, store.OpCloudPowerOn, (*drivers.Manager).CloudPowerOn},
		{api.CloudPowerOff, store.OpCloudPowerOff, (*drivers.Manager).CloudPowerOff},
		{api.CloudReboot, store.OpCloudReboot, (*drivers.Manager).CloudReboot},
	} {
		s.handle(r, a.rt, func(r *http.Request) (any, error) {
			account, id := chi.URLParam(r, "account"), instanceParam(r)
			if err := a.call(s.drivers(), r.Context(), tokenFrom(r.Context()).Name, account, id); err != nil {
				return nil, err
			}
			return api.CloudAccepted{Account: account, Operation: a.op, Instances: []string{id}}, nil
		})
	}
	s.handle(r, api.CloudReverseDNS, func(r *http.Request) (any, error) {
		var req api.ReverseDNSRequest
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		ip, err := netip.ParseAddr(req.IP)
		if err != nil {
			return nil, errcode.New(errcode.CloudInvalid, "ip: %.64q is not an IP address", req.IP).With(errcode.DetailField, "ip")
		}
		account, id := chi.URLParam(r, "account"), instanceParam(r)
		if err := s.drivers().CloudReverseDNS(r.Context(), tokenFrom(r.Context()).Name, account, id, ip, req.Hostname); err != nil {
			return nil, err
		}
		return api.CloudAccepted{Account: account, Operation: store.OpCloudReverseDNS, Instances: []string{id}}, nil
	})
	s.handle(r, api.CloudTransfer, func(r *http.Request) (any, error) {
		account, id := chi.URLParam(r, "account"), instanceParam(r)
		t, err := s.drivers().CloudTransfer(r.Context(), tokenFrom(r.Context()).Name, account, id)
		if err != nil {
			return nil, err
		}
		return api.Transfer{Account: account, Instance: id, UsedBytes: t.UsedBytes, AllowanceBytes: t.AllowanceBytes}, nil
	})
	s.handle(r, api.CloudSwapIPv4, func(r *http.Request) (any, error) {
		var req api.SwapIPv4Request
		if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
			return nil, err
		}
		account := chi.URLParam(r, "account")
		if err := s.drivers().CloudSwapIPv4(r.Context(), tokenFrom(r.Context()).Name, account, req.A, req.B); err != nil {
			return nil, err
		}
		return api.CloudAccepted{Account: account, Operation: store.OpCloudSwapIPv4, Instances: []string{req.A, req.B}}, nil
	})
	s.handle(r, api.CloudAccount, func(r *http.Request) (any, error) {
		info, err := s.drivers().CloudAccount(r.Context(), tokenFrom(r.Context()).Name, chi.URLParam(r, "account"))
		if err != nil {
			return nil, err
		}
		f := info.Features
		return api.CloudAccountInfo{Account: info.Account.Name, Driver: info.Account.Driver, Test: info.Account.Test,
			Name: info.Provider.Name, Company: info.Provider.Company, Email: info.Provider.Email,
			Features: api.CloudFeatures{IPv4Swap: f.IPv4Swap, IPv4SwapRequiresStopped: f.IPv4SwapRequiresStopped,
				ReverseDNS: f.ReverseDNS, MonthlyTransfer: f.MonthlyTransfer}}, nil
	})
}

func (s *Server) cloudCreate(r *http.Request) (any, error) {
	var req api.CloudCreateRequest
	if err := readJSON(r, maxCloudCreateBody, &req); err != nil {
		return nil, err
	}
	account := chi.URLParam(r, "account")
	in, err := s.drivers().CloudCreate(r.Context(), tokenFrom(r.Context()).Name, account, cloud.CreateRequest{
		Region: req.Region, Type: req.Type, Image: req.Image, Label: req.Label, Tags: req.Tags, SSHKeys: req.SSHKeys,
		UserData: req.UserData, DiskEncryption: cloud.DiskEncryption(req.DiskEncryption),
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("cloud instance created", "account", account, "instance", in.ID, "label", in.Label, "by", tokenFrom(r.Context()).Name)
	return drivers.InstanceToAPI(in), nil
}

func (s *Server) cloudDelete(r *http.Request) (any, error) {
	var req api.CloudDeleteRequest
	if err := readJSON(r, maxCloudSmallBody, &req); err != nil {
		return nil, err
	}
	account, id := chi.URLParam(r, "account"), instanceParam(r)
	in, err := s.drivers().CloudDelete(r.Context(), tokenFrom(r.Context()).Name, account, id, req.Confirm)
	if err != nil {
		return nil, err
	}
	s.log.Info("cloud instance deleted", "account", account, "instance", in.ID, "label", in.Label, "by", tokenFrom(r.Context()).Name)
	return drivers.InstanceToAPI(in), nil
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
