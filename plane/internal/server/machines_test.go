package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestMachineRoutes: the inventory lists the plane's node (grey: no report yet); an operator writes a
// machine down, edits, confirms and removes it; bad fields answer their codes; a viewer may only list.
func TestMachineRoutes(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	post, get := http.MethodPost, http.MethodGet
	var list api.MachineList
	p.want(http.StatusOK, "", store.RoleViewer, get, "/machines", nil, &list)
	if len(list.Machines) != 1 || list.Machines[0].Source != api.MachineFromNode || list.Machines[0].Color != api.MachineGrey || list.Warnings == nil {
		t.Fatalf("inventory %+v", list)
	}
	body := func(req api.MachineRequest) []byte { b, _ := json.Marshal(req); return b }
	good := api.MachineRequest{Name: "nas", Purpose: "backups", Owner: "ops", OSRelease: "ubuntu 24.04", RetireBy: "2030-01-31"}
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleViewer, post, "/machines", body(good), nil)
	bad := good
	bad.OSRelease = "noble"
	p.want(http.StatusBadRequest, errcode.MachineOSReleaseInvalid, store.RoleOperator, post, "/machines", body(bad), nil)
	bad = good
	bad.RetireBy = "1900-01-01"
	p.want(http.StatusBadRequest, errcode.MachineRetireByInvalid, store.RoleOperator, post, "/machines", body(bad), nil)
	var m api.Machine
	p.want(http.StatusCreated, "", store.RoleOperator, post, "/machines", body(good), &m)
	if m.Color != api.MachineGreen || m.RetireBy != "2030-01-31" || m.ConfirmedBy != "tok-operator" {
		t.Fatalf("written %+v", m)
	}
	p.want(http.StatusConflict, errcode.MachineNameTaken, store.RoleOperator, post, "/machines", body(good), nil)
	good.OSRelease = "ubuntu 20.04"
	p.want(http.StatusOK, "", store.RoleOperator, post, "/machines/"+m.ID+"/edit", body(good), &m)
	if m.Color != api.MachineRed || m.OSRelease != "ubuntu 20.04" {
		t.Fatalf("edited %+v", m)
	}
	p.want(http.StatusOK, "", store.RoleOperator, post, "/machines/"+m.ID+"/confirm", nil, &m)
	p.want(http.StatusOK, "", store.RoleOperator, post, "/machines/"+m.ID+"/remove", nil, &m)
	p.want(http.StatusNotFound, errcode.MachineNotFound, store.RoleOperator, post, "/machines/"+m.ID+"/remove", nil, nil)
	p.want(http.StatusNotFound, errcode.MachineNotFound, store.RoleOperator, post, "/machines/"+m.ID+"/confirm", nil, nil)
	p.want(http.StatusNotFound, errcode.MachineNotFound, store.RoleOperator, post, "/machines/"+m.ID+"/edit", body(good), nil)
}
