package main_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/reset_failed_unit.wasm"

func TestResetFailed(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": "Id=nginx.service\nLoadState=loaded\n" +
		"ActiveState=failed\nSubState=failed\nResult=exit-code\n"})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	var c struct {
		Before, After struct {
			ActiveState string `json:"active_state"`
			Result      string
		}
	}
	w.Must(map[string]any{"unit": "nginx.service"}, &c)
	if c.Before.ActiveState != "failed" || c.After.ActiveState != "inactive" || c.After.Result != "success" {
		t.Fatalf("%+v", c)
	}
	if got := strings.Join(fake.Actions(), ";"); got != "reset-failed nginx.service" {
		t.Fatalf("actions %q", got)
	}
	if res := w.Run(map[string]any{"unit": "ssh.service"}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("ssh: %s", res.Code)
	}
}
