package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestSchedulesCommands: the default schedule is listed and shown (text and -o json), paused and
// resumed; bad input exits 1 with its code and stores nothing; delete removes it.
func TestSchedulesCommands(t *testing.T) {
	f := newFleet(t)
	code, out, errOut := f.lexicon("schedules", "list")
	if code != 0 || !strings.Contains(out, "packages-report") || !strings.Contains(out, "every 1h") {
		t.Fatalf("schedules list: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = f.lexicon("schedules", "show", "packages-report", "-o", "json")
	var sc api.Schedule
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Word != "packages_report" || sc.Every != "1h" || sc.Selector != "all" || sc.NextRunAt.IsZero() {
		t.Fatalf("schedules show -o json: %d %s", code, out)
	}
	code, out, _ = f.lexicon("schedules", "pause", sc.ID, "-o", "json")
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || !sc.Paused {
		t.Fatalf("schedules pause: %d %s", code, out)
	}
	code, out, _ = f.lexicon("schedules", "show", "packages-report")
	if code != 0 || !strings.Contains(out, "next run: paused") || !strings.Contains(out, "last run: never") {
		t.Fatalf("schedules show paused: %d %s", code, out)
	}
	if code, out, _ = f.lexicon("schedules", "resume", "packages-report", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Paused {
		t.Fatalf("schedules resume: %d %s", code, out)
	}
	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"schedules", "create", "nightly", "--word", "disk_usage", "--cron", "0 25 * * *"}, errcode.ScheduleCronInvalid},
		{[]string{"schedules", "create", "nightly", "--word", "disk_usage", "--every", "1h", "--selector", "Role=web"}, errcode.ScheduleSelectorInvalid},
		{[]string{"schedules", "create", "nightly", "--word", "disk_usage", "--every", "1h"}, errcode.ScheduleWordUnknown},
		{[]string{"schedules", "edit", "packages-report", "--cron", "every day"}, errcode.ScheduleCronInvalid},
		{[]string{"schedules", "show", "nightly"}, errcode.ScheduleNotFound},
	} {
		code, out, _ := f.lexicon(append(c.args, "-o", "json")...)
		if code != 1 || !strings.Contains(out, `"code": "`+c.code+`"`) && !strings.Contains(out, `"code":"`+c.code+`"`) {
			t.Errorf("%v: %d %s, want %s", c.args, code, out, c.code)
		}
	}
	code, out, _ = f.lexicon("schedules", "list", "-o", "json")
	var l api.ScheduleList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Schedules) != 1 {
		t.Fatalf("after refusals: %d %s", code, out)
	}
	if code, out, _ = f.lexicon("schedules", "delete", "packages-report"); code != 0 {
		t.Fatalf("schedules delete: %d %s", code, out)
	}
	if code, out, _ = f.lexicon("schedules", "list"); code != 0 || !strings.Contains(out, "no schedules") {
		t.Fatalf("after delete: %d %s", code, out)
	}
}

// TestFleetSecurity: a node whose newest packages_report has a critical fix waiting is red, with its
// reason, in text and -o json.
func TestFleetSecurity(t *testing.T) {
	f := newFleet(t)
	code, out, _ := f.lexicon("fleet", "security", "-o", "json")
	var v api.SecurityView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Rows) != 1 || v.Rows[0].Level != api.SecurityGrey || v.Rows[0].Reasons[0].Kind != "no_word" {
		t.Fatalf("fleet security before any report: %d %s", code, out)
	}
	if _, err := f.st.NodeReport(t.Context(), store.NodeReportParams{ID: f.node.ID, Now: time.Now(), AgentVersion: "0.3.0", Idle: true,
		Vocabulary: []store.WordRef{{Name: "packages_report", Version: "1.0.0", Digest: strings.Repeat("b", 64), Class: "look"}}}); err != nil {
		t.Fatal(err)
	}
	storetest.Completed(t, f.st, f.node.ID, "packages_report", json.RawMessage(`{"known": true, "os": {"pretty_name": "Debian GNU/Linux 12 (bookworm)"},
		"security_upgrades": [{"name": "openssl", "installed": "3.0.1", "candidate": "3.0.2", "origin": "Debian-Security:bookworm-security"}]}`), time.Now())
	code, out, _ = f.lexicon("fleet", "security")
	if code != 0 || !strings.Contains(out, "1 red") || !strings.Contains(out, "critical fix waiting: openssl 3.0.1 → 3.0.2") || !strings.Contains(out, "bookworm") {
		t.Fatalf("fleet security: %d %s", code, out)
	}
}
