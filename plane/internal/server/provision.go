package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// provisionRoutes serves provisioning: making a machine needs admin (it spends money and joins a node
// without a person), reading the records viewer.
func (s *Server) provisionRoutes(r chi.Router) {
	s.handle(r, api.NodesProvision, func(r *http.Request) (any, error) {
		e, err := s.provisioner()
		if err != nil {
			return nil, err
		}
		var req api.ProvisionRequest
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		who := tokenFrom(r.Context()).Name
		pr, err := e.Provision(r.Context(), who, provision.Request{Name: req.Name, Account: req.Account, Region: req.Region,
			Type: req.Type, Image: req.Image, Platform: req.Platform, Labels: req.Labels, DNSAccount: req.DNSAccount, DNSZone: req.Zone})
		if err != nil {
			return nil, err
		}
		s.log.Info("provisioning started", "provisioning", pr.ID, "name", pr.Name, "account", pr.Account, "by", who)
		s.provisionsChanged()
		return apiconv.Provisioning(pr), nil
	})
	s.handle(r, api.ProvisioningsList, func(r *http.Request) (any, error) {
		q, err := api.ParseProvisioningsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		list, err := s.store.ProvisioningList(r.Context(), store.ProvisioningListParams{Open: q.Open, State: store.ProvisioningState(q.State), Limit: q.Limit})
		return api.ProvisioningList{Provisionings: apiconv.Each(list, apiconv.Provisioning)}, err
	})
	s.handle(r, api.ProvisioningsShow, func(r *http.Request) (any, error) {
		pr, err := s.store.ProvisioningGet(r.Context(), store.ProvisioningGetParams{ID: chi.URLParam(r, "id")})
		return apiconv.Provisioning(pr), err
	})
	s.handle(r, api.NodesAdopt, func(r *http.Request) (any, error) {
		e, err := s.provisioner()
		if err != nil {
			return nil, err
		}
		var req api.AdoptRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		who := tokenFrom(r.Context()).Name
		pr, err := e.Adopt(r.Context(), who, chi.URLParam(r, "id"), req.Account, req.InstanceID)
		if err != nil {
			return nil, err
		}
		s.log.Info("instance adopted", "node", pr.NodeID, "instance", pr.InstanceID, "account", pr.Account, "by", who)
		return apiconv.Provisioning(pr), nil
	})
	s.handle(r, api.NodesDecommission, func(r *http.Request) (any, error) {
		e, err := s.provisioner()
		if err != nil {
			return nil, err
		}
		var req api.DecommissionRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		n, err := s.cfg.Nodes.Get(r.Context(), chi.URLParam(r, "id"))
		if err != nil {
			return nil, err
		}
		if req.Confirm != n.Name {
			return nil, errcode.New(errcode.UsageInvalid, "type the node's name back to decommission it: --confirm %s", n.Name).
				With(errcode.DetailField, "confirm")
		}
		who := tokenFrom(r.Context()).Name
		d, err := e.Decommission(r.Context(), who, n.ID)
		if err != nil {
			return nil, err
		}
		s.cfg.Nodes.JobsEnded(d.Node.Cancelled, d.Node.Lost)
		named := func(j store.Job) api.Job { return apiconv.Job(j, n.Name) }
		node := n
		if d.Node.Node.ID != "" {
			node = d.Node.Node
		}
		return api.Decommissioned{Provisioning: apiconv.Provisioning(d.Provisioning), Node: apiconv.Node(node),
			Cancelled: apiconv.Each(d.Node.Cancelled, named), Lost: apiconv.Each(d.Node.Lost, named)}, nil
	})
}

func (s *Server) provisioner() (*provision.Engine, error) {
	if s.cfg.Provision == nil {
		return nil, errcode.New(errcode.DriverUnavailable, "this plane runs without drivers: it cannot provision")
	}
	return s.cfg.Provision, nil
}

func (s *Server) provisionsChanged() {
	if s.cfg.ProvisionsChanged != nil {
		s.cfg.ProvisionsChanged()
	}
}

// provisionToken is the one-time token of an unsigned artifact request ("" when it carries none).
func provisionToken(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), provision.AuthScheme+" ")
	if !ok || r.Header.Get("Signature") != "" {
		return ""
	}
	return strings.TrimSpace(tok)
}

// artifactRoute serves the artifact route: signed by a node as always, or, for a machine that is being
// provisioned and has no key yet, proved by its provisioning's unused, unexpired one-time token, and
// then only the agent binary the fleet's target release pins for a platform.
func (s *Server) artifactRoute(signed http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := provisionToken(r)
		if token == "" {
			signed(w, r)
			return
		}
		if err := s.addrLimit.allow(sourceAddr(r), s.now()); err != nil {
			s.writeError(w, r, err)
			return
		}
		q := r.URL.Query()
		if len(q) != 1 || !q.Has("agent") {
			s.writeError(w, r, errcode.New(errcode.RequestMalformed, "a provisioning token fetches only agent=<os>-<arch>"))
			return
		}
		if !provision.LooksLikeToken(token) {
			s.writeError(w, r, errcode.New(errcode.ProvisionTokenInvalid, "the token is not a provisioning token"))
			return
		}
		if _, err := s.store.ProvisioningTokenCheck(r.Context(), store.ProvisioningTokenParams{TokenHash: provision.TokenHash(token), Now: s.now()}); err != nil {
			s.writeError(w, r, err)
			return
		}
		seq, err := s.store.FleetTarget(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.serveArtifact(w, r, seq)
	}
}
