package osrelease

import (
	"strings"
	"time"
)

// Support is when a release's support ends: Standard is the end of its publisher's regular security
// support, Extended the end of the long-term support that follows it (Debian LTS, Ubuntu Pro), and
// Source where the dates are published.
type Support struct {
	Standard time.Time
	Extended time.Time
	Source   string
}

// The dates as their publishers gave them on 2026-12-03. Debian publishes days; Ubuntu publishes
// months, taken here as their last day. For the RHEL family, standard support is the end of Red Hat's
// Maintenance Support (Rocky's and AlmaLinux's security support follow it), and the extended end is
// Red Hat's Extended Life-cycle Support; their VERSION_ID carries a minor version ("9.4"), and the
// support is the major version's. Debian moves a release's end by a few weeks to line up with a
// point release now and then: the dates are the announced ones, and a release nearing its end is
// checked against the source again.
const (
	debianSource = "https://wiki.debian.org/DebianReleases and https://wiki.debian.org/LTS (Debian 12: https://www.debian.org/News/2024/20240814)"
	ubuntuSource = "https://ubuntu.com/about/release-cycle"
	rhelSource   = "https://access.redhat.com/support/policy/updates/errata"
	rockySource  = "https://wiki.rockylinux.org/rocky/version/"
	almaSource   = "https://wiki.almalinux.org/release-notes/"
	centosSource = "https://www.centos.org/centos-linux-eol/ and https://www.centos.org/centos-stream/"
)

// majorOnly are the releases whose support is their major version's.
var majorOnly = map[string]bool{"rhel": true, "rocky": true, "almalinux": true, "centos": true}

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
	{"rhel", "7"}:       {day(2024, 6, 30), day(2028, 6, 30), rhelSource},
	{"rhel", "8"}:       {day(2029, 5, 31), day(2032, 5, 31), rhelSource},
	{"rhel", "9"}:       {day(2032, 5, 31), day(2035, 5, 31), rhelSource},
	{"rocky", "8"}:      {day(2029, 5, 31), time.Time{}, rockySource},
	{"rocky", "9"}:      {day(2032, 5, 31), time.Time{}, rockySource},
	{"almalinux", "8"}:  {day(2029, 3, 1), time.Time{}, almaSource},
	{"almalinux", "9"}:  {day(2032, 5, 31), time.Time{}, almaSource},
	{"centos", "7"}:     {day(2024, 6, 30), time.Time{}, centosSource},
	{"centos", "8"}:     {day(2021, 12, 31), time.Time{}, centosSource},
	{"centos", "9"}:     {day(2027, 5, 31), time.Time{}, centosSource},
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// SupportEnd returns when r's support ends: from the table, or from the release's own SUPPORT_END
// when the table does not know it (then Extended is zero and Source names os-release). ok is false
// when neither knows.
func SupportEnd(r Release) (Support, bool) {
	if s, ok := table[key{r.ID, r.VersionID}]; ok {
		return s, true
	}
	if major, _, _ := strings.Cut(r.VersionID, "."); majorOnly[r.ID] {
		if s, ok := table[key{r.ID, major}]; ok {
			return s, true
		}
	}
	if !r.SupportEnd.IsZero() {
		return Support{Standard: r.SupportEnd, Source: "the release's os-release (SUPPORT_END)"}, true
	}
	return Support{}, false
}
