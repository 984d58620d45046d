package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// releaseRoutes serves the releases room: publishing (a tar stream, capped here), and reading what is
// published.
func (s *Server) releaseRoutes(r chi.Router) {
	s.handle(r, api.ReleasesList, func(r *http.Request) (any, error) {
		q, err := api.ParseReleasesListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Releases.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.ReleasesShow, func(r *http.Request) (any, error) {
		seq, err := api.ParseSequence(chi.URLParam(r, "sequence"), "sequence")
		if err != nil {
			return nil, err
		}
		return s.cfg.Releases.Show(r.Context(), tokenFrom(r.Context()), seq)
	})
	s.handle(r, api.ReleasesDiff, func(r *http.Request) (any, error) {
		from, err := api.ParseSequence(chi.URLParam(r, "sequence"), "sequence")
		if err != nil {
			return nil, err
		}
		to, err := api.ParseSequence(chi.URLParam(r, "to"), "to")
		if err != nil {
			return nil, err
		}
		return s.cfg.Releases.Diff(r.Context(), tokenFrom(r.Context()), from, to)
	})
	s.handleRaw(r, api.ReleasesPublish, func(w http.ResponseWriter, r *http.Request) (any, error) {
		q, err := api.ParseReleasesPublishQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Releases.Publish(r.Context(), tokenFrom(r.Context()), http.MaxBytesReader(w, r.Body, api.MaxReleaseUpload), q.DeployAll)
	})
}
