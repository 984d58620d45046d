package osrelease

import "time"

// Support is when a release's support ends: Standard is the end of its publisher's regular security
// support, Extended the end of the long-term support that follows it (Debian LTS, Ubuntu Pro), and
// Source where the dates are published.
type Support struct {
	Standard time.Time
	Extended time.Time
	Source   string
}

// The dates as their publishers gave them on 2026-12-03. Debian publishes days; Ubuntu publishes
// months, taken here as their last day. Debian moves a release's end by a few weeks to line up with a
// point release now and then: the dates are the announced ones, and a release nearing its end is
// checked against the source again.
const (
	debianSource = "https://wiki.debian.org/DebianReleases and https://wiki.debian.org/LTS (Debian 12: https://www.debian.org/News/2024/20240814)"
	ubuntuSource = "https://ubuntu.com/about/release-cycle"
)

type key struct{ id, version string }

var table = map[key]Support{
	{"debian", "9"}:     {day(2020, 7, 6), day(2022, 6, 30), debianSource},
	{"debian", "10"}:    {day(2022, 9, 10), day(2024, 6, 30), debianSource},
	{"debian", "11"}:    {day(2024, 8, 14), day(2026, 8, 31), debianSource},
	{"debian", "12"}:    {day(2026, 6, 10), day(2028, 6, 30), debianSource},
	{"debian", "13"}:    {day(2028, 8, 9), day(2030, 6, 30), debianSource},
	{"ubuntu", "18.04"}: {day(2023, 5, 31), day(2028, 4, 30), ubuntuSource},
	{"ubuntu", "20.04"}: {day(2025, 5, 31), day(2030, 4, 30), ubuntuSource},
	{"ubuntu", "22.04"}: {day(2027, 5, 31), day(2032, 4, 30), ubuntuSource},
	{"ubuntu", "24.04"}: {day(2029, 4, 30), day(2034, 4, 30), ubuntuSource},
	{"ubuntu", "24.10"}: {day(2025, 7, 31), time.Time{}, ubuntuSource},
	{"ubuntu", "25.04"}: {day(2026, 1, 31), time.Time{}, ubuntuSource},
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// SupportEnd returns when r's support ends: from the table, or from the release's own SUPPORT_END
// when the table does not know it (then Extended is zero and Source names os-release). ok is false
// when neither knows.
func SupportEnd(r Release) (Support, bool) {
	if s, ok := table[key{r.ID, r.VersionID}]; ok {
		return s, true
	}
	if !r.SupportEnd.IsZero() {
		return Support{Standard: r.SupportEnd, Source: "the release's os-release (SUPPORT_END)"}, true
	}
	return Support{}, false
}
