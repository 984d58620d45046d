package main_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/restart_unit.wasm"

const failedNginx = "Id=nginx.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainStatus=1\nMainPID=0\n"

type change struct {
	Before, After struct {
		ActiveState string `json:"active_state"`
		Result      string
		MainPID     int `json:"main_pid"`
	}
}

func TestRestart(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": failedNginx})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	var c change
	w.Must(map[string]any{"unit": "nginx.service"}, &c)
	if c.Before.ActiveState != "failed" || c.After.ActiveState != "active" || c.After.MainPID == 0 {
		t.Fatalf("%+v", c)
	}
	if got := strings.Join(fake.Actions(), ";"); got != "restart nginx.service" {
		t.Fatalf("actions %q", got)
	}
}

func TestRestartThatFails(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": failedNginx})
	fake.FailNextRestart("nginx.service")
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	res := w.Run(map[string]any{"unit": "nginx.service"})
	if res.Code != "restart_unit.failed" || res.Details["after_active_state"] != "failed" {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
}

func TestRefusals(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"sshd.service": "ActiveState=active\n"})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	if res := w.Run(map[string]any{"unit": "sshd.service"}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("sshd: %s", res.Code)
	}
	if res := w.Run(map[string]any{"unit": "redis-server.service"}); res.Code != "restart_unit.not_found" {
		t.Fatalf("missing unit: %s %s", res.Code, res.Message)
	}
	if len(fake.Actions()) != 0 {
		t.Fatalf("actions %v", fake.Actions())
	}
	nosd := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd())
	if res := nosd.Run(map[string]any{"unit": "nginx.service"}); res.Code != errcode.CapabilityUnknown {
		t.Fatalf("without systemd: %s", res.Code)
	}
}
