package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const cred = "tok-3f9a1c77d2e84b10"

func TestSecretNeverPrints(t *testing.T) {
	s := driver.NewSecret(cred)
	cfg := driver.Config{Settings: json.RawMessage(`{}`), Credential: s}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "secret", s)
	js, _ := json.Marshal(cfg)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s), "%x": fmt.Sprintf("%x", s),
		"json": string(js), "slog": logged.String(), "error": fmt.Errorf("bad %v", s).Error(),
	} {
		if strings.Contains(out, cred) {
			t.Errorf("%s shows the credential: %s", name, out)
		}
		if !strings.Contains(out, driver.Redacted) {
			t.Errorf("%s does not say the value was redacted: %s", name, out)
		}
	}
	if s.Reveal() != cred {
		t.Fatal("Reveal lost the credential")
	}
}

func TestScrubber(t *testing.T) {
	var sc driver.Scrubber
	sc.Add(driver.NewSecret(cred))
	sc.Add(driver.NewSecret(`quo"te\secret`))
	sc.Add(driver.NewSecret("abc")) // too short to scrub safely
	cases := map[string]string{
		"401 for token " + cred + " at /v4": "401 for token [REDACTED] at /v4",
		`{"k":"quo\"te\\secret"}`:           `{"k":"[REDACTED]"}`,
		`raw quo"te\secret`:                 `raw [REDACTED]`,
		"abc stays":                         "abc stays",
	}
	for in, want := range cases {
		if got := sc.Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
	var nilScrub *driver.Scrubber
	if nilScrub.Scrub(cred) != cred {
		t.Error("a nil Scrubber must pass text through")
	}
}

func TestStatusRoundTrip(t *testing.T) {
	var sc driver.Scrubber
	sc.Add(driver.NewSecret(cred))
	cases := []struct {
		name     string
		err      error
		code     string
		msg      string
		detailOK func(map[string]any) bool
	}{
		{"coded with details", errcode.New(errcode.CloudNotFound, "no instance 42").With("id", "42"), errcode.CloudNotFound, "no instance 42",
			func(d map[string]any) bool { return d["id"] == "42" }},
		{"wrapped coded", fmt.Errorf("outer: %w", errcode.New(errcode.CloudQuota, "limit")), errcode.CloudQuota, "limit", nil},
		{"uncoded", errors.New("boom"), errcode.DriverInternal, "boom", nil},
		{"deadline", context.DeadlineExceeded, errcode.DriverTimeout, "context deadline exceeded", nil},
		{"secret in message", errcode.New(errcode.CloudAuth, "token %s refused", cred).With("token", cred), errcode.CloudAuth, "token [REDACTED] refused",
			func(d map[string]any) bool { return d["token"] == driver.Redacted }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wire := driver.ToStatus(c.err, &sc)
			if strings.Contains(wire.Error(), cred) {
				t.Fatalf("status carries the credential: %v", wire)
			}
			back := driver.FromStatus(wire)
			var e *errcode.Error
			if !errors.As(back, &e) || e.Code != c.code || e.Message != c.msg {
				t.Fatalf("FromStatus = %#v, want code %s message %q", back, c.code, c.msg)
			}
			if c.detailOK != nil && !c.detailOK(e.Details) {
				t.Errorf("details %v did not survive", e.Details)
			}
			if driver.IsTransport(back) {
				t.Error("a driver's own error reads as a transport failure")
			}
		})
	}
	if driver.ToStatus(nil, &sc) != nil || driver.FromStatus(nil) != nil {
		t.Error("nil must stay nil")
	}
}

func TestDecodeSettings(t *testing.T) {
	var v struct {
		Endpoint string `json:"endpoint"`
	}
	if err := driver.DecodeSettings(json.RawMessage(`{"endpoint":"https://x"}`), &v); err != nil || v.Endpoint != "https://x" {
		t.Fatalf("DecodeSettings = %v, %+v", err, v)
	}
	for _, bad := range []string{`{"endpoint":"x","other":1}`, `{"endpoint":1}`, `{} {}`, `nope`} {
		if err := driver.DecodeSettings(json.RawMessage(bad), &v); !errcode.Has(err, errcode.DriverConfigInvalid) {
			t.Errorf("DecodeSettings(%s) = %v, want driver.config_invalid", bad, err)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://api.linode.com/v4":  true,
		"http://127.0.0.1:8080/v4":   true,
		"http://[::1]:80/":           true,
		"http://localhost:1/":        true,
		"http://api.linode.com/v4":   false, // credentials never cross a network in clear text
		"https://user:pw@host/":      false,
		"ftp://host/":                false,
		"https://host/?token=x":      false,
		"/relative":                  false,
		"http://127.0.0.1.evil.com/": false,
	} {
		_, err := driver.CheckEndpoint("endpoint", raw)
		if ok && err != nil {
			t.Errorf("%s: %v", raw, err)
		}
		if !ok && !errcode.Has(err, errcode.DriverConfigInvalid) {
			t.Errorf("%s: got %v, want driver.config_invalid", raw, err)
		}
	}
}

func TestLogHandlerSpeaksHCLogJSONAndScrubs(t *testing.T) {
	var sc driver.Scrubber
	sc.Add(driver.NewSecret(cred))
	var out strings.Builder
	log := slog.New(driver.NewLogHandler(&out, &sc, slog.LevelDebug))
	log.Warn("provider said "+cred, "raw", cred)
	var line map[string]any
	if err := json.Unmarshal([]byte(out.String()), &line); err != nil {
		t.Fatalf("not one JSON line: %q", out.String())
	}
	if line["@level"] != "warn" || line["@message"] != "provider said [REDACTED]" || line["raw"] != driver.Redacted || line["@timestamp"] == nil {
		t.Errorf("log line %v: want hclog keys and the credential scrubbed", line)
	}
}
