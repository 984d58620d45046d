package security

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 12, 3, 23, 0, 0, 0, time.UTC)
	fresh := now.Add(-10 * time.Minute)
	report := func(change func(r *Report)) *Report {
		r := &Report{Known: true}
		if change != nil {
			change(r)
		}
		return r
	}
	fix := func(name string) Upgrade {
		return Upgrade{Name: name, Installed: "1.0", Candidate: "1.1", Origin: "Debian-Security:bookworm-security"}
	}
	cases := []struct {
		name  string
		in    Input
		level string
		kinds []string
		aged  []string
		stale []string
	}{
		{"lacks the word", Input{}, Grey, []string{"no_word"}, nil, nil},
		{"nothing reported", Input{HasWord: true}, Grey, []string{"no_report"}, nil, nil},
		{"package manager unknown", Input{HasWord: true, Report: &Report{Unknown: []string{"packages"}}, ReportedAt: fresh}, Grey, []string{"unknown"}, nil, nil},
		{"clean", Input{HasWord: true, Report: report(nil), ReportedAt: fresh}, Green, nil, nil, nil},
		{"critical fix", Input{HasWord: true, Report: report(func(r *Report) { r.SecurityUpgrades = []Upgrade{fix("openssl")} }), ReportedAt: fresh},
			Red, []string{"critical_fix"}, nil, nil},
		{"kernel by pattern", Input{HasWord: true, Report: report(func(r *Report) { r.SecurityUpgrades = []Upgrade{fix("linux-image-6.1.0-28-amd64")} }), ReportedAt: fresh},
			Red, []string{"critical_fix"}, nil, nil},
		{"critical fix aged", Input{HasWord: true, Report: report(func(r *Report) { r.SecurityUpgrades = []Upgrade{fix("sudo"), fix("curl")} }), ReportedAt: fresh,
			FixesBefore: []Upgrade{fix("sudo"), fix("curl")}}, Red, []string{"critical_fix", "fix"}, []string{"sudo"}, nil},
		{"other fix", Input{HasWord: true, Report: report(func(r *Report) { r.SecurityUpgrades = []Upgrade{fix("curl")} }), ReportedAt: fresh},
			Amber, []string{"fix"}, nil, nil},
		{"half done", Input{HasWord: true, Report: report(func(r *Report) {
			r.HalfConfigured = []Package{{Name: "lexfail", Version: "1.0", Status: "half-configured"}}
		}), ReportedAt: fresh},
			Red, []string{"half_done"}, nil, nil},
		{"critical unit on old code", Input{HasWord: true, Report: report(func(r *Report) { r.StaleServices = []Service{{Unit: "ssh.service"}} }), ReportedAt: fresh},
			Red, []string{"critical_old_code"}, nil, []string{"ssh.service"}},
		{"unit named after a critical package", Input{HasWord: true, Report: report(func(r *Report) { r.StaleServices = []Service{{Unit: "sudo.service"}} }), ReportedAt: fresh},
			Red, []string{"critical_old_code"}, nil, []string{"sudo.service"}},
		{"other unit on old code", Input{HasWord: true, Report: report(func(r *Report) { r.StaleServices = []Service{{Unit: "lexd.service"}} }), ReportedAt: fresh},
			Amber, []string{"old_code"}, nil, []string{"lexd.service"}},
		{"reboot owed today", Input{HasWord: true, Report: report(func(r *Report) { r.Reboot.Owed = true }), ReportedAt: fresh}, Green, nil, nil, nil},
		{"reboot owed over a day", Input{HasWord: true, Report: report(func(r *Report) { r.Reboot.Owed = true }), ReportedAt: fresh, OwedBefore: true},
			Amber, []string{"reboot_owed"}, nil, nil},
		{"silent", Input{HasWord: true, Report: report(nil), ReportedAt: now.Add(-3 * time.Hour)}, Amber, []string{"silent"}, nil, nil},
		{"red before amber", Input{HasWord: true, Report: report(func(r *Report) {
			r.SecurityUpgrades = []Upgrade{fix("curl"), fix("libc6")}
			r.StaleServices = []Service{{Unit: "cron.service"}}
		}), ReportedAt: now.Add(-3 * time.Hour)}, Red, []string{"critical_fix", "fix", "old_code", "silent"}, nil, []string{"cron.service"}},
		{"word gone, old report kept", Input{Report: report(nil), ReportedAt: fresh}, Green, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			v := Classify(DefaultConfig(), c.in)
			var kinds []string
			for _, r := range v.Reasons {
				kinds = append(kinds, r.Kind)
				if r.Text == "" {
					t.Errorf("reason %s has no text", r.Kind)
				}
			}
			if v.Level != c.level || !reflect.DeepEqual(kinds, c.kinds) || !reflect.DeepEqual(v.CriticalAged, c.aged) || !reflect.DeepEqual(v.OldCode, c.stale) {
				t.Fatalf("got %s %v aged %v stale %v, want %s %v aged %v stale %v", v.Level, kinds, v.CriticalAged, v.OldCode, c.level, c.kinds, c.aged, c.stale)
			}
		})
	}
}

// TestClassifyServed: on a node that serves a package or unit by its roles, its fix waiting and its
// replaced code are red, naming the roles; the same on a node that does not serve them stays amber.
func TestClassifyServed(t *testing.T) {
	now := time.Date(2026, 12, 3, 23, 0, 0, 0, time.UTC)
	nginx := Upgrade{Name: "nginx", Installed: "1.22.1-9", Candidate: "1.22.1-9+deb12u1", Origin: "Debian-Security:bookworm-security"}
	web := Served{Packages: map[string][]string{"nginx": {"web"}}, Units: map[string][]string{"nginx.service": {"web"}}}
	cases := []struct {
		name   string
		report Report
		served Served
		before []Upgrade
		level  string
		kinds  []string
		text   string // in the first reason
		aged   []string
	}{
		{"served fix", Report{SecurityUpgrades: []Upgrade{nginx}}, web, nil, Red, []string{"critical_fix"},
			"critical fix waiting: nginx 1.22.1-9 → 1.22.1-9+deb12u1 (Debian-Security:bookworm-security), served by role web", nil},
		{"same fix, not served", Report{SecurityUpgrades: []Upgrade{nginx}}, Served{}, nil, Amber, []string{"fix"}, "1 security fix(es) waiting: nginx", nil},
		{"another node's roles", Report{SecurityUpgrades: []Upgrade{nginx}}, Served{Packages: map[string][]string{"postgresql": {"db"}}}, nil,
			Amber, []string{"fix"}, "nginx", nil},
		{"served fix aged", Report{SecurityUpgrades: []Upgrade{nginx}}, web, []Upgrade{nginx}, Red, []string{"critical_fix"}, "served by role web", []string{"nginx"}},
		{"served by two roles", Report{SecurityUpgrades: []Upgrade{nginx}}, Served{Packages: map[string][]string{"nginx": {"proxy", "web"}}}, nil,
			Red, []string{"critical_fix"}, "served by roles proxy, web", nil},
		{"critical and served", Report{SecurityUpgrades: []Upgrade{{Name: "openssl", Installed: "1", Candidate: "2", Origin: "o"}}},
			Served{Packages: map[string][]string{"openssl": {"tls"}}}, nil, Red, []string{"critical_fix"}, "openssl 1 → 2 (o), served by role tls", nil},
		{"served unit on old code", Report{StaleServices: []Service{{Unit: "nginx.service"}}}, web, nil, Red, []string{"critical_old_code"},
			"critical service nginx.service runs replaced code, served by role web", nil},
		{"unit named after a served package", Report{StaleServices: []Service{{Unit: "nginx.service"}}}, Served{Packages: map[string][]string{"nginx": {"web"}}}, nil,
			Red, []string{"critical_old_code"}, "served by role web", nil},
		{"unit not served", Report{StaleServices: []Service{{Unit: "nginx.service"}}}, Served{}, nil, Amber, []string{"old_code"}, "nginx.service", nil},
		{"served, another unit stale", Report{StaleServices: []Service{{Unit: "nginx.service"}, {Unit: "cron.service"}}}, web, nil,
			Red, []string{"critical_old_code", "old_code"}, "nginx.service", nil},
		{"served, nothing waiting", Report{}, web, nil, Green, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.report.Known = true
			v := Classify(DefaultConfig(), Input{HasWord: true, Report: &c.report, ReportedAt: now, FixesBefore: c.before, Served: c.served, Now: now})
			var kinds []string
			for _, r := range v.Reasons {
				kinds = append(kinds, r.Kind)
			}
			if v.Level != c.level || !reflect.DeepEqual(kinds, c.kinds) || !reflect.DeepEqual(v.CriticalAged, c.aged) {
				t.Fatalf("got %s %v aged %v, want %s %v aged %v", v.Level, kinds, v.CriticalAged, c.level, c.kinds, c.aged)
			}
			if c.text != "" && !strings.Contains(v.Reasons[0].Text, c.text) {
				t.Fatalf("reason %q, want %q in it", v.Reasons[0].Text, c.text)
			}
		})
	}
}
