package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
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
	var list api.ReleaseList
	if err := u.route(r, api.ReleasesList, nil, api.ReleasesListQuery{Limit: 100}.Values(), nil, &list); err != nil {
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
	var d releaseData
	if err := u.route(r, api.ReleasesShow, []string{chi.URLParam(r, "seq")}, nil, nil, &d.ReleaseDetail); err != nil {
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
	var list api.ReleaseList
	if err := u.route(r, api.ReleasesList, nil, api.ReleasesListQuery{Limit: 100}.Values(), nil, &list); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Releases = list.Releases
	if d.From == "" && d.To == "" && len(list.Releases) >= 2 {
		d.From, d.To = strconv.FormatInt(list.Releases[1].Sequence, 10), strconv.FormatInt(list.Releases[0].Sequence, 10)
	}
	if d.From != "" && d.To != "" {
		d.Diff = new(api.ReleaseDiff)
		if err := u.route(r, api.ReleasesDiff, []string{d.From, d.To}, nil, nil, d.Diff); err != nil {
			u.fail(w, r, nil, err)
			return
		}
	}
	u.page(w, r, "diff", d)
}

// releaseUpload sends the uploaded tar to the API's publish route as it is, so the plane verifies it
// exactly as for lexicon releases publish, and shows the verifier's verdicts: on the new release's
// page when it was taken, next to the upload form when it was refused.
func (u *UI) releaseUpload(w http.ResponseWriter, r *http.Request) {
	f, _, err := r.FormFile("release")
	if err != nil {
		u.releasesPage(w, r, http.StatusBadRequest, releasesData{Error: errMessage(errcode.Wrap(err, errcode.RequestMalformed, "choose a release file (a tar of statement.bundle.json and sha256/) to upload"))})
		return
	}
	defer f.Close()
	var q url.Values
	if r.PostFormValue("deploy_all") == "true" {
		q = url.Values{"deploy_all": {"true"}}
	}
	var rel api.Release
	if err := u.callRaw(r, api.ReleasesPublish.Method, api.ReleasesPublish.Pattern, q, f, "application/x-tar", &rel); err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.releasesPage(w, r, errcode.Status(errcode.Code(err)), releasesData{Error: errMessage(err), Checks: checksOf(err)})
		return
	}
	d := releaseData{Published: true, Checks: rel.Checks, Rollout: rel.Rollout}
	if err := u.route(r, api.ReleasesShow, []string{strconv.FormatInt(rel.Sequence, 10)}, nil, nil, &d.ReleaseDetail); err != nil {
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
