package server

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
)

// provisionRoutes serves the provisioning room.
func (s *Server) provisionRoutes(r chi.Router) {
	s.handle(r, api.NodesInstallCommand, func(r *http.Request) (any, error) {
		body, err := readBody(r, 16<<10)
		if err != nil {
			return nil, err
		}
		var req api.InstallCommandRequest // the body is optional
		if len(bytes.TrimSpace(body)) > 0 {
			if err := decodeStrict(body, &req); err != nil {
				return nil, err
			}
		}
		return s.cfg.Provision.InstallCommand(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.NodesProvision, func(r *http.Request) (any, error) {
		var req api.ProvisionRequest
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Provision.Provision(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.ProvisioningsList, func(r *http.Request) (any, error) {
		q, err := api.ParseProvisioningsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Provision.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.ProvisioningsShow, func(r *http.Request) (any, error) {
		return s.cfg.Provision.Show(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.NodesAdopt, func(r *http.Request) (any, error) {
		var req api.AdoptRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Provision.Adopt(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	s.handle(r, api.NodesDecommission, func(r *http.Request) (any, error) {
		var req api.DecommissionRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Provision.Decommission(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
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
// provisioned and has no key yet, proved by its provisioning's one-time token, which the provisioning
// room checks (charged to the source address, as every request that proves no node is).
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
		data, contentType, err := s.cfg.Provision.Artifact(r.Context(), token, r.URL.Query())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeBytes(w, contentType, data)
	}
}
