package dns

import (
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Records and TXT data come from outside (the admin's records file, the provider's answers): the
// parsers never panic, refuse with a dns.* code, and what they accept is stable.

func FuzzNormalize(f *testing.F) {
	f.Add("A", "www", "192.0.2.1", int64(300), uint16(0))
	f.Add("TXT", "_acme", `a "quoted" value`, int64(60), uint16(0))
	f.Add("SRV", "_sip._tcp", "1 2 t.example.", int64(0), uint16(5))
	f.Add("CAA", "@", `0 issue "ca"`, int64(0), uint16(0))
	f.Fuzz(func(t *testing.T, typ, name, value string, ttl int64, prio uint16) {
		r := Record{Type: typ, Name: name, Value: value, TTL: time.Duration(ttl) * time.Second, Priority: prio}
		n, err := r.Normalize()
		if err != nil {
			if c := errcode.Code(err); c != errcode.DNSInvalid && c != errcode.DNSUnsupported {
				t.Fatalf("Normalize refused with code %q", c)
			}
			return
		}
		again, err := n.Normalize()
		if err != nil || again != n {
			t.Fatalf("Normalize is not stable: %+v -> %+v, %v", n, again, err)
		}
	})
}

func FuzzTXT(f *testing.F) {
	f.Add(`"a" "b"`)
	f.Add(`"\065"`)
	f.Add(`plain`)
	f.Add(`"open`)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := UnquoteTXT(s)
		if err != nil {
			if errcode.Code(err) != errcode.DNSInvalid {
				t.Fatalf("UnquoteTXT refused with %v", err)
			}
			return
		}
		back, err := UnquoteTXT(QuoteTXT(v))
		if err != nil || back != v {
			t.Fatalf("quote round trip of %q gave %q, %v", v, back, err)
		}
	})
}
