package dns

import (
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		in   Record
		want Record
		code string
	}{
		{Record{Type: "a", Name: "WWW", Value: "192.0.2.1"}, Record{Type: "A", Name: "www", Value: "192.0.2.1"}, ""},
		{Record{Type: "A", Name: "", Value: "192.0.2.1"}, Record{Type: "A", Name: "@", Value: "192.0.2.1"}, ""},
		{Record{Type: "AAAA", Name: "v6", Value: "2001:DB8:0::1"}, Record{Type: "AAAA", Name: "v6", Value: "2001:db8::1"}, ""},
		{Record{Type: "CNAME", Name: "c", Value: "Target.Example.NET"}, Record{Type: "CNAME", Name: "c", Value: "target.example.net."}, ""},
		{Record{Type: "MX", Name: "@", Value: "mail.example.com.", Priority: 10}, Record{Type: "MX", Name: "@", Value: "mail.example.com.", Priority: 10}, ""},
		{Record{Type: "SRV", Name: "_sip._tcp", Value: "5  5060 sip.example.com", Priority: 1}, Record{Type: "SRV", Name: "_sip._tcp", Value: "5 5060 sip.example.com.", Priority: 1}, ""},
		{Record{Type: "TXT", Name: "*.wild", Value: `say "hi"`}, Record{Type: "TXT", Name: "*.wild", Value: `say "hi"`}, ""},
		{Record{Type: "CAA", Name: "@", Value: `0 issue "letsencrypt.org"`}, Record{Type: "CAA", Name: "@", Value: `0 issue "letsencrypt.org"`}, ""},
		{Record{Type: "A", Name: "x", Value: "192.0.2.1", TTL: 300 * time.Second}, Record{Type: "A", Name: "x", Value: "192.0.2.1", TTL: 300 * time.Second}, ""},

		{Record{Type: "A", Name: "x", Value: "2001:db8::1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "AAAA", Name: "x", Value: "::ffff:192.0.2.1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "x.example.com.", Value: "192.0.2.1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "a..b", Value: "192.0.2.1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "a.*", Value: "192.0.2.1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: strings.Repeat("a", 64), Value: "192.0.2.1"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "x", Value: "192.0.2.1", TTL: 1500 * time.Millisecond}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "x", Value: "192.0.2.1", TTL: 8 * 24 * time.Hour}, Record{}, errcode.DNSInvalid},
		{Record{Type: "A", Name: "x", Value: "192.0.2.1", Priority: 1}, Record{}, errcode.DNSInvalid},
		{Record{Type: "SRV", Name: "x", Value: "1 70000 t.example."}, Record{}, errcode.DNSInvalid},
		{Record{Type: "CAA", Name: "x", Value: `300 issue "x"`}, Record{}, errcode.DNSInvalid},
		{Record{Type: "TXT", Name: "x", Value: ""}, Record{}, errcode.DNSInvalid},
		{Record{Type: "TXT", Name: "x", Value: "bad\nline"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "TXT", Name: "x", Value: "\xff"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "", Name: "x", Value: "y"}, Record{}, errcode.DNSInvalid},
		{Record{Type: "SOA", Name: "x", Value: "y"}, Record{}, errcode.DNSUnsupported},
	}
	for _, c := range cases {
		got, err := c.in.Normalize()
		if c.code != "" {
			if !errcode.Has(err, c.code) {
				t.Errorf("Normalize(%+v) = %v, want %s", c.in, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Normalize(%+v) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestNormalizeAllNamesTheIndex(t *testing.T) {
	_, err := NormalizeAll([]Record{{Type: "A", Name: "ok", Value: "192.0.2.1"}, {Type: "A", Name: "bad", Value: "x"}})
	e, ok := err.(*errcode.Error)
	if !ok || e.Details["index"] != 1 || e.Details["field"] != "value" {
		t.Fatalf("NormalizeAll = %#v: want the second record's value named", err)
	}
}

func TestZoneNames(t *testing.T) {
	for in, want := range map[string]string{"Example.COM": "example.com.", "example.com.": "example.com.", "a.b.c": "a.b.c."} {
		if got, err := NormalizeZone(in); err != nil || got != want {
			t.Errorf("NormalizeZone(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "bad zone", "*.example.com", "a..b"} {
		if _, err := NormalizeZone(bad); !errcode.Has(err, errcode.DNSInvalid) {
			t.Errorf("NormalizeZone(%q) = %v, want dns.invalid", bad, err)
		}
	}
	if got := Absolute("www", "example.com."); got != "www.example.com." {
		t.Errorf("Absolute = %q", got)
	}
	if got := Absolute("@", "example.com."); got != "example.com." {
		t.Errorf("Absolute(@) = %q", got)
	}
	for fqdn, want := range map[string]string{"www.example.com.": "www", "EXAMPLE.com": "@", "a.b.example.com.": "a.b"} {
		if got, ok := Relative(fqdn, "example.com."); !ok || got != want {
			t.Errorf("Relative(%q) = %q, %v; want %q", fqdn, got, ok, want)
		}
	}
	if _, ok := Relative("www.example.net.", "example.com."); ok {
		t.Error("Relative accepted a name outside the zone")
	}
	if _, ok := Relative("notexample.com.", "example.com."); ok {
		t.Error("Relative accepted a name that only ends like the zone")
	}
}

func TestTXT(t *testing.T) {
	long := strings.Repeat("abcdefghij", 60) // 600 bytes
	parts := SplitTXT(long)
	if len(parts) != 3 || len(parts[0]) != 255 || len(parts[1]) != 255 || len(parts[2]) != 90 {
		t.Fatalf("SplitTXT gave parts of %d, %d, %d", len(parts[0]), len(parts[1]), len(parts[2]))
	}
	if JoinTXT(parts) != long {
		t.Fatal("JoinTXT does not undo SplitTXT")
	}
	// A multi-byte character at the boundary stays whole.
	utf := strings.Repeat("a", 254) + "é" + "b"
	if p := SplitTXT(utf); len(p) != 2 || p[0] != strings.Repeat("a", 254) || p[1] != "éb" {
		t.Errorf("SplitTXT split a UTF-8 character: %q", p)
	}
	for _, v := range []string{`plain`, `with "quotes" and \back\slash`, long, "v=spf1 -all"} {
		q := QuoteTXT(v)
		back, err := UnquoteTXT(q)
		if err != nil || back != v {
			t.Errorf("UnquoteTXT(QuoteTXT(%.30q)) = %.30q, %v", v, back, err)
		}
	}
	if q := QuoteTXT(`a"b`); q != `"a\"b"` {
		t.Errorf("QuoteTXT = %s", q)
	}
	cases := map[string]string{
		`"a" "b"`:         "ab",
		`"a\"b"`:          `a"b`,
		`"\065\066"`:      "AB",
		`unquoted text`:   "unquoted text",
		`  "spaced"   `:   "spaced",
		`"with \\ slash"`: `with \ slash`,
	}
	for in, want := range cases {
		if got, err := UnquoteTXT(in); err != nil || got != want {
			t.Errorf("UnquoteTXT(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`"open`, `"a" junk`, `"\999"`} {
		if _, err := UnquoteTXT(bad); !errcode.Has(err, errcode.DNSInvalid) {
			t.Errorf("UnquoteTXT(%s) = %v, want dns.invalid", bad, err)
		}
	}
}

func TestPlans(t *testing.T) {
	r := func(name, typ, value string) Record {
		return Record{Name: name, Type: typ, Value: value, TTL: time.Minute}
	}
	existing := []Record{r("n", "A", "192.0.2.1"), r("n", "A", "192.0.2.2"), r("n", "TXT", "t"), r("m", "A", "192.0.2.3")}
	if add := PlanAppend(existing, []Record{r("n", "A", "192.0.2.1"), r("n", "A", "192.0.2.9"), r("n", "A", "192.0.2.9")}); len(add) != 1 || add[0].Value != "192.0.2.9" {
		t.Errorf("PlanAppend = %v", add)
	}
	del, add := PlanSet(existing, []Record{r("n", "A", "192.0.2.2"), r("n", "A", "192.0.2.5")})
	if len(del) != 1 || del[0].Value != "192.0.2.1" || len(add) != 1 || add[0].Value != "192.0.2.5" {
		t.Errorf("PlanSet = del %v add %v", del, add)
	}
	// A changed TTL replaces the record.
	changed := r("n", "TXT", "t")
	changed.TTL = time.Hour
	if del, add := PlanSet(existing, []Record{changed}); len(del) != 1 || len(add) != 1 || add[0].TTL != time.Hour {
		t.Errorf("PlanSet with a new TTL = del %v add %v", del, add)
	}
	if del := PlanDelete(existing, []Record{{Name: "n", Type: "A"}}); len(del) != 2 {
		t.Errorf("PlanDelete(n/A) = %v", del)
	}
	if del := PlanDelete(existing, []Record{{Name: "n"}}); len(del) != 3 {
		t.Errorf("PlanDelete(n) = %v", del)
	}
}

func TestNormalizePattern(t *testing.T) {
	p, err := NormalizePattern(Record{Name: "WWW", Type: "a"})
	if err != nil || p != (Record{Name: "www", Type: "A"}) {
		t.Errorf("NormalizePattern = %+v, %v", p, err)
	}
	if _, err := NormalizePattern(Record{Name: "bad name"}); !errcode.Has(err, errcode.DNSInvalid) {
		t.Errorf("NormalizePattern(bad name) = %v", err)
	}
	if _, err := NormalizePattern(Record{Name: "x", Type: "A", Value: "nope"}); !errcode.Has(err, errcode.DNSInvalid) {
		t.Errorf("NormalizePattern(bad value) = %v", err)
	}
}
