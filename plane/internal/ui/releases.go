package ui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type releasesData struct {
	Releases []api.Release
	// Error and Checks are a refused upload's: the code and message, and the verifier's verdicts.
	Error  string
	Checks []api.Check
}

func (u *UI) releases(w http.ResponseWriter, r *http.Request) {
	u.releasesPage(w, r, http.StatusOK, releasesData{})
}

func (u *UI) releasesPage(w http.ResponseWriter, r *http.Request, status int, d releasesData) {
	list, err := run(u, r, api.ReleasesList, u.cfg.Releases.List, api.ReleasesListQuery{Limit: 100})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Releases = list.Releases
	v := from(r)
	u.render(w, r, status, "releases", &v, d)
}

// releaseData is one release's page; Published is set on the answer to an upload, with the verdicts.
type releaseData struct {
	api.ReleaseDetail
	Published bool
	Checks    []api.Check
	Rollout   string
}

// Kinds groups the module table by kind, in the order the page shows them.
func (d releaseData) Kinds() []kindRows {
	order := []string{"word", "recipe", "driver"}
	by := map[string][]api.ReleaseModule{}
	for _, m := range d.Modules {
		by[m.Kind] = append(by[m.Kind], m)
	}
	var out []kindRows
	for _, k := range order {
		out = append(out, kindRows{Kind: k, Rows: by[k]})
		delete(by, k)
	}
	for k, rows := range by { // a kind a newer statement brings: shown, not dropped
		out = append(out, kindRows{Kind: k, Rows: rows})
	}
	return out
}

type kindRows struct {
	Kind string
	Rows []api.ReleaseModule
}

func (u *UI) release(w http.ResponseWriter, r *http.Request) {
	seq, err := api.ParseSequence(chi.URLParam(r, "seq"), "sequence")
	var d releaseData
	if err == nil {
		d.ReleaseDetail, err = run(u, r, api.ReleasesShow, u.cfg.Releases.Show, seq)
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "release", d)
}

type diffData struct {
	Releases []api.Release
	From, To string
	Diff     *api.ReleaseDiff
}

// releaseDiff compares two published releases with the API's diff, which is lexicon-release diff's.
// Without both sequences it offers the choice, defaulting to the two newest releases.
func (u *UI) releaseDiff(w http.ResponseWriter, r *http.Request) {
	d := diffData{From: r.URL.Query().Get("from"), To: r.URL.Query().Get("to")}
	list, err := run(u, r, api.ReleasesList, u.cfg.Releases.List, api.ReleasesListQuery{Limit: 100})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Releases = list.Releases
	if d.From == "" && d.To == "" && len(list.Releases) >= 2 {
		d.From, d.To = strconv.FormatInt(list.Releases[1].Sequence, 10), strconv.FormatInt(list.Releases[0].Sequence, 10)
	}
	if d.From != "" && d.To != "" {
		from, err := api.ParseSequence(d.From, "sequence")
		var to int64
		if err == nil {
			to, err = api.ParseSequence(d.To, "to")
		}
		var diff api.ReleaseDiff
		if err == nil {
			diff, err = run(u, r, api.ReleasesDiff, func(ctx context.Context, who api.Token, _ struct{}) (api.ReleaseDiff, error) {
				return u.cfg.Releases.Diff(ctx, who, from, to)
			}, struct{}{})
		}
		d.Diff = &diff
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
	}
	u.page(w, r, "diff", d)
}

// releaseUpload publishes the uploaded tar as it is, so the plane verifies it exactly as for lexicon
// releases publish, and shows the verifier's verdicts: on the new release's page when it was taken,
// next to the upload form when it was refused.
func (u *UI) releaseUpload(w http.ResponseWriter, r *http.Request) {
	f, _, err := r.FormFile("release")
	if err != nil {
		u.releasesPage(w, r, http.StatusBadRequest, releasesData{Error: errMessage(r, errcode.Wrap(err, errcode.RequestMalformed, "choose a release file (a tar of statement.bundle.json and sha256/) to upload"))})
		return
	}
	defer f.Close()
	deployAll := r.PostFormValue("deploy_all") == "true"
	rel, err := run(u, r, api.ReleasesPublish, func(ctx context.Context, who api.Token, body io.Reader) (api.Release, error) {
		return u.cfg.Releases.Publish(ctx, who, body, deployAll)
	}, io.Reader(f))
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.releasesPage(w, r, errcode.Status(errcode.Code(err)), releasesData{Error: errMessage(r, err), Checks: checksOf(err)})
		return
	}
	d := releaseData{Published: true, Checks: rel.Checks, Rollout: rel.Rollout}
	if d.ReleaseDetail, err = run(u, r, api.ReleasesShow, u.cfg.Releases.Show, rel.Sequence); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, api.ReleasesPublish.Status, "release", &v, d)
}

// checksOf reads the verifier's verdicts from a refusal's details.checks, if it has them.
func checksOf(err error) []api.Check {
	e := errcode.From(err, errcode.InternalError)
	if e == nil || e.Details[errcode.DetailChecks] == nil {
		return nil
	}
	raw, mErr := json.Marshal(e.Details[errcode.DetailChecks])
	if mErr != nil {
		return nil
	}
	var out []api.Check
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}
