package schedules

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// parser reads the five standard fields (minute hour day-of-month month day-of-week) and the
// descriptors (@hourly, @daily, ...).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron expression, evaluated in UTC: the replicas of one plane may sit in different
// zones, and a schedule must fire at one instant whichever replica fires it. A zone prefix and @every
// (which is what an interval is for) are refused.
func ParseCron(expr string) (cron.Schedule, error) {
	bad := func(format string, args ...any) (cron.Schedule, error) {
		return nil, errcode.New(errcode.ScheduleCronInvalid, format, args...).With(errcode.DetailField, "cron")
	}
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return bad("the cron expression is empty")
	case len(e) > store.MaxScheduleCron || !store.ValidText(e):
		return bad("a cron expression is text of at most %d bytes", store.MaxScheduleCron)
	case strings.Contains(e, "TZ="):
		return bad("cron expression %q names a zone; schedules run in UTC", e)
	case strings.HasPrefix(e, "@every"):
		return bad("cron expression %q is an interval; give it as every instead", e)
	}
	s, err := parser.Parse("CRON_TZ=UTC " + e)
	if err != nil {
		return bad("cron expression %q does not parse (%v): give five fields, minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly, @monthly, @yearly", e, err)
	}
	// A valid expression that never matches (February 30th) would leave the schedule due for ever.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return bad("cron expression %q never matches a time", e)
	}
	return s, nil
}

// ParseEvery parses an interval: a Go duration of at least a minute and at most a year.
func ParseEvery(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < store.MinScheduleEvery || d > store.MaxScheduleEvery {
		return 0, errcode.New(errcode.ScheduleIntervalInvalid, "every %q is not a duration from 1m to 8784h (such as 15m or 1h)", s).With(errcode.DetailField, "every")
	}
	return d, nil
}

// next is when a schedule fires after now: the interval from now, or the cron expression's next match
// after now. Counting from now rather than from the tick that was due is what makes a plane that was
// down fire a schedule once on its return, not once per tick it missed.
func next(sc store.Schedule, now time.Time) (time.Time, error) {
	if sc.Cron == "" {
		return now.Add(sc.Every), nil
	}
	s, err := ParseCron(sc.Cron)
	if err != nil {
		return time.Time{}, err
	}
	return s.Next(now).UTC(), nil
}
