package schedules

import (
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzParseCron: any text either parses to a schedule whose next match after a time is later than it,
// or is refused with schedule.cron_invalid; nothing panics.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 * * * *", "*/5 * * * *", "@hourly", "@daily", "0 0 30 2 *", "61 * * * *", "", "TZ=UTC 0 * * * *",
		"@every 1m", "0-59/7 1,2,3 * JAN-MAR MON-FRI", "* * * *", "? ? ? ? ?", "\x00"} {
		f.Add(s)
	}
	t0 := time.Date(2026, 12, 3, 22, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseCron(expr)
		if err != nil {
			if !errcode.Has(err, errcode.ScheduleCronInvalid) {
				t.Fatalf("%q: %v, want %s", expr, err, errcode.ScheduleCronInvalid)
			}
			return
		}
		if n := s.Next(t0); !n.After(t0) {
			t.Fatalf("%q: next after %s is %s", expr, t0, n)
		}
	})
}
