package server_test

import (
	"net/http"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestScheduleAndSecurityRoutes: the schedules' routes answer what the document says, with their
// codes and roles, and the fleet security view lists the nodes.
func TestScheduleAndSecurityRoutes(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	const viewer, operator = store.RoleViewer, store.RoleOperator
	get, post := http.MethodGet, http.MethodPost

	var list api.ScheduleList
	p.want(http.StatusOK, "", viewer, get, "/schedules", nil, &list)
	if len(list.Schedules) != 1 || list.Schedules[0].Name != "packages-report" {
		t.Fatalf("schedules %+v", list)
	}
	var sc api.Schedule
	p.want(http.StatusOK, "", viewer, get, "/schedules/packages-report", nil, &sc)
	p.want(http.StatusForbidden, errcode.AuthForbidden, viewer, post, "/schedules/packages-report/pause", nil, nil)
	p.want(http.StatusOK, "", operator, post, "/schedules/"+sc.ID+"/pause", nil, &sc)
	if !sc.Paused {
		t.Fatalf("paused %+v", sc)
	}
	p.want(http.StatusOK, "", operator, post, "/schedules/packages-report/resume", nil, &sc)
	p.want(http.StatusBadRequest, errcode.ScheduleCronInvalid, operator, post, "/schedules", []byte(`{"name":"x","word":"probe","cron":"* * *"}`), nil)
	p.want(http.StatusBadRequest, errcode.ScheduleSelectorInvalid, operator, post, "/schedules", []byte(`{"name":"x","word":"probe","every":"1h","selector":"a,b=c"}`), nil)
	p.want(http.StatusUnprocessableEntity, errcode.ScheduleWordUnknown, operator, post, "/schedules", []byte(`{"name":"x","word":"no_such_word","every":"1h"}`), nil)
	p.want(http.StatusBadRequest, errcode.ScheduleCronInvalid, operator, post, "/schedules/packages-report/edit", []byte(`{"cron":"@every 5m"}`), nil)
	p.want(http.StatusNotFound, errcode.ScheduleNotFound, viewer, get, "/schedules/nothing-here", nil, nil)
	p.want(http.StatusOK, "", operator, post, "/schedules/packages-report/delete", nil, &sc)
	p.want(http.StatusNotFound, errcode.ScheduleNotFound, operator, post, "/schedules/packages-report/delete", nil, nil)

	var v api.SecurityView
	p.want(http.StatusOK, "", viewer, get, "/fleet/security", nil, &v)
	if len(v.Rows) == 0 || v.Rows[0].Level == "" || len(v.Rows[0].Reasons) == 0 {
		t.Fatalf("security view %+v", v)
	}
}
