package osrelease_test

import (
	"os"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/osrelease"
)

// Debian 12's own os-release, as mmdebstrap's root holds it.
const bookworm = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
`

func TestParseDebian(t *testing.T) {
	r := osrelease.Parse([]byte(bookworm))
	if r.ID != "debian" || r.VersionID != "12" || r.Codename != "bookworm" || r.PrettyName != "Debian GNU/Linux 12 (bookworm)" {
		t.Fatalf("%+v", r)
	}
	s, ok := osrelease.SupportEnd(r)
	if !ok || !s.Standard.Equal(time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)) || s.Extended.Year() != 2028 || s.Source == "" {
		t.Fatalf("%+v %v", s, ok)
	}
}

func TestParseQuotingAndSupportEnd(t *testing.T) {
	r := osrelease.Parse([]byte("# comment\nID='fedora'\nVERSION_ID=41\nPRETTY_NAME=\"Fedora \\\"41\\\"\"\nSUPPORT_END=2025-12-15\nID_LIKE=\"rhel centos\"\nbroken line\nNAME=\"unterminated\n"))
	if r.ID != "fedora" || r.VersionID != "41" || r.PrettyName != `Fedora "41"` || len(r.IDLike) != 2 {
		t.Fatalf("%+v", r)
	}
	s, ok := osrelease.SupportEnd(r)
	if !ok || s.Standard.Format(time.DateOnly) != "2025-12-15" || !s.Extended.IsZero() {
		t.Fatalf("%+v %v", s, ok)
	}
	if _, ok := osrelease.SupportEnd(osrelease.Release{ID: "plan9", VersionID: "4"}); ok {
		t.Fatal("an unknown release has a support end")
	}
	if r := osrelease.Parse([]byte("SUPPORT_END=soon\nID=$(reboot)\n")); !r.SupportEnd.IsZero() || r.ID != "" {
		t.Fatalf("malformed values were taken: %+v", r)
	}
}

// This machine's os-release parses to something with an id, as every Linux has.
func TestParseThisMachine(t *testing.T) {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		data, err = os.ReadFile("/usr/lib/os-release")
	}
	if err != nil {
		t.Skip("no os-release here")
	}
	if r := osrelease.Parse(data); r.ID == "" {
		t.Fatalf("no ID in %q", data)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(bookworm))
	f.Add([]byte("SUPPORT_END=2029-04-30\nID=\"a\\\\b\"\nVERSION_ID='x'"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := osrelease.Parse(data)
		if s, ok := osrelease.SupportEnd(r); ok && s.Standard.IsZero() {
			t.Fatalf("a support end with no date: %+v", r)
		}
		if !r.SupportEnd.IsZero() && r.SupportEnd.Format(time.DateOnly) == "" {
			t.Fatal("unprintable date")
		}
	})
}

// The RHEL family's support is its major version's: RHEL 9.4 and Rocky 8.10 are found, RHEL 7 ended.
func TestSupportRHELFamily(t *testing.T) {
	for _, c := range []struct {
		id, version string
		end         time.Time
	}{
		{"rhel", "9.4", utc(2032, 5, 31)}, {"rocky", "8.10", utc(2029, 5, 31)}, {"almalinux", "9", utc(2032, 5, 31)}, {"rhel", "7.9", utc(2024, 6, 30)},
	} {
		s, ok := osrelease.SupportEnd(osrelease.Release{ID: c.id, VersionID: c.version})
		if !ok || !s.Standard.Equal(c.end) || s.Source == "" {
			t.Fatalf("%s %s: %+v %v", c.id, c.version, s, ok)
		}
	}
	if _, ok := osrelease.SupportEnd(osrelease.Release{ID: "ubuntu", VersionID: "22.04.3"}); ok {
		t.Fatal("a point release of Ubuntu is not in the table")
	}
}

func utc(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
