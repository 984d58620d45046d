package main_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/unit_status.wasm"

type status struct {
	Known          bool
	LoadState      string `json:"load_state"`
	ActiveState    string `json:"active_state"`
	SubState       string `json:"sub_state"`
	Result         string
	ExecMainStatus int    `json:"exec_main_status"`
	ExecMainCode   string `json:"exec_main_code"`
	NRestarts      int    `json:"n_restarts"`
}

func TestFailedUnit(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": "Id=nginx.service\nLoadState=loaded\n" +
		"ActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainStatus=1\nExecMainCode=1\nMainPID=0\nNRestarts=5\n"})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	var s status
	w.Must(map[string]any{"unit": "nginx.service"}, &s)
	want := status{Known: true, LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code",
		ExecMainStatus: 1, ExecMainCode: "exited", NRestarts: 5}
	if s != want {
		t.Fatalf("%+v", s)
	}
	w.Must(map[string]any{"unit": "missing.service"}, &s)
	if s.LoadState != "not-found" {
		t.Fatalf("missing unit: %+v", s)
	}
	if res := w.Run(map[string]any{"unit": "-H evil"}); res.Code != errcode.WordParamInvalid {
		t.Fatalf("option as unit: %s", res.Code)
	}
}

func TestUnknownWithoutSystemd(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd())
	var s status
	w.Must(map[string]any{"unit": "nginx.service"}, &s)
	if s.Known || s.ActiveState != "unknown" {
		t.Fatalf("%+v", s)
	}
}
