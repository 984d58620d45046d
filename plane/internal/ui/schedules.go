package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type schedulesData struct {
	Schedules []api.Schedule
	// Form is what a refused create form held, shown again with Error.
	Form  url.Values
	Error string
}

func (u *UI) schedules(w http.ResponseWriter, r *http.Request) {
	u.schedulesPage(w, r, http.StatusOK, schedulesData{Form: url.Values{}})
}

func (u *UI) schedulesPage(w http.ResponseWriter, r *http.Request, status int, d schedulesData) {
	who, err := u.may(r, api.SchedulesList)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	list, err := u.cfg.Schedules.List(r.Context(), who)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Schedules = list.Schedules
	v := from(r)
	u.render(w, r, status, "schedules", &v, d)
}

// scheduleParams reads a form's params field: empty is none, anything else must be JSON.
func scheduleParams(f url.Values) (json.RawMessage, bool) {
	s := strings.TrimSpace(f.Get("params"))
	if s == "" {
		return nil, true
	}
	return json.RawMessage(s), json.Valid([]byte(s))
}

// scheduleCreate reads the create form into the API's request; the plane checks the rest.
func (u *UI) scheduleCreate(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	params, ok := scheduleParams(f)
	if !ok {
		u.schedulesPage(w, r, http.StatusBadRequest, schedulesData{Form: f, Error: "Params must be JSON, such as {} or {\"unit\": \"nginx.service\"}."})
		return
	}
	req := api.ScheduleRequest{Name: strings.TrimSpace(f.Get("name")), Word: strings.TrimSpace(f.Get("word")), Params: params,
		Selector: strings.TrimSpace(f.Get("selector")), Every: strings.TrimSpace(f.Get("every")), Cron: strings.TrimSpace(f.Get("cron"))}
	sc, err := run(u, r, api.SchedulesCreate, u.cfg.Schedules.Create, req)
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.schedulesPage(w, r, errcode.Status(errcode.Code(err)), schedulesData{Form: f, Error: errMessage(r, err)})
		return
	}
	http.Redirect(w, r, Prefix+"/schedules/"+url.PathEscape(sc.ID), http.StatusSeeOther)
}

type scheduleData struct {
	api.Schedule
	// Form is what a refused edit form held, shown again with Error.
	Form  url.Values
	Error string
}

// ParamsText is the schedule's params as the edit form shows them.
func (d scheduleData) ParamsText() string { return string(d.Params) }

func (u *UI) schedule(w http.ResponseWriter, r *http.Request) {
	u.schedulePage(w, r, http.StatusOK, scheduleData{Form: url.Values{}})
}

func (u *UI) schedulePage(w http.ResponseWriter, r *http.Request, status int, d scheduleData) {
	var err error
	if d.Schedule, err = run(u, r, api.SchedulesShow, u.cfg.Schedules.Show, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, status, "schedule", &v, d)
}

// scheduleEdit changes what the edit form gives; empty fields stay as they are.
func (u *UI) scheduleEdit(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	id := chi.URLParam(r, "id")
	params, ok := scheduleParams(f)
	if !ok {
		u.schedulePage(w, r, http.StatusBadRequest, scheduleData{Form: f, Error: "Params must be JSON."})
		return
	}
	e := api.ScheduleEdit{Word: strings.TrimSpace(f.Get("word")), Params: params, Selector: strings.TrimSpace(f.Get("selector")),
		Every: strings.TrimSpace(f.Get("every")), Cron: strings.TrimSpace(f.Get("cron"))}
	who, err := u.may(r, api.SchedulesEdit)
	if err == nil {
		_, err = u.cfg.Schedules.Edit(r.Context(), who, id, e)
	}
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Has(err, errcode.ScheduleNotFound) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.schedulePage(w, r, errcode.Status(errcode.Code(err)), scheduleData{Form: f, Error: errMessage(r, err)})
		return
	}
	http.Redirect(w, r, Prefix+"/schedules/"+url.PathEscape(id), http.StatusSeeOther)
}

// scheduleMove is pause, resume or delete, named by its route: move is the room's method. Delete goes
// back to the list, the others to the schedule.
func (u *UI) scheduleMove(rt api.Route, move func(context.Context, api.Token, string) (api.Schedule, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if _, err := run(u, r, rt, move, id); err != nil {
			u.fail(w, r, nil, err)
			return
		}
		to := Prefix + "/schedules/" + url.PathEscape(id)
		if rt.Pattern == api.SchedulesDelete.Pattern {
			to = Prefix + "/schedules"
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}
