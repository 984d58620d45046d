package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
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
