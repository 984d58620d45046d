package ui

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

var testProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

// TestClientAddr: which address a sign-in is counted under, for each shape of connection and header.
func TestClientAddr(t *testing.T) {
	for _, c := range []struct{ peer, xff, want string }{
		{"198.51.100.1:4000", "", "198.51.100.1"},
		{"198.51.100.1:4000", "203.0.113.1", "198.51.100.1"},         // an untrusted peer's header is ignored
		{"10.0.0.1:4000", "", "10.0.0.1"},                            // a proxy that names nobody
		{"10.0.0.1:4000", "203.0.113.1", "203.0.113.1"},              // the client behind a proxy
		{"10.0.0.1:4000", "1.1.1.1, 203.0.113.1", "203.0.113.1"},     // the client's own entries are not read
		{"10.0.0.1:4000", "203.0.113.1, 10.0.0.2", "203.0.113.1"},    // trusted hops are passed over
		{"10.0.0.1:4000", "10.0.0.3, 10.0.0.2", "10.0.0.3"},          // all trusted: the left-most
		{"10.0.0.1:4000", "203.0.113.1, junk, 10.0.0.2", "10.0.0.2"}, // a garbled entry stops at the last trusted
		{"10.0.0.1:4000", "junk", "10.0.0.1"},
		{"10.0.0.1:4000", "[2001:db8::1]:443", "2001:db8::1"},
		{"10.0.0.1:4000", "::ffff:203.0.113.1", "203.0.113.1"},
		{"[::ffff:10.0.0.1]:4000", "203.0.113.1", "203.0.113.1"}, // a mapped proxy address is the proxy
		{"[fd00::1]:4000", "2001:db8::1", "2001:db8::1"},
	} {
		r := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientAddr(r, testProxies); got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
	// Several headers are one list, in order.
	r := &http.Request{RemoteAddr: "10.0.0.1:1", Header: http.Header{"X-Forwarded-For": {"203.0.113.1", "198.51.100.9, 10.0.0.2"}}}
	if got := clientAddr(r, testProxies); got != "198.51.100.9" {
		t.Errorf("two headers: %s", got)
	}
}

// FuzzClientAddr: whatever a trusted proxy forwards, the address counted is the peer's or one the
// header holds, never empty.
func FuzzClientAddr(f *testing.F) {
	f.Add("203.0.113.1, 10.0.0.2")
	f.Add("[2001:db8::1]:443,junk")
	f.Fuzz(func(t *testing.T, xff string) {
		r := &http.Request{RemoteAddr: "10.0.0.1:1", Header: http.Header{"X-Forwarded-For": {xff}}}
		got := clientAddr(r, testProxies)
		if got == "" {
			t.Fatal("no address")
		}
		if _, err := netip.ParseAddr(got); err != nil {
			t.Fatalf("%q is not an address", got)
		}
		if got == "10.0.0.1" {
			return
		}
		for _, e := range strings.Split(xff, ",") {
			if a, err := parseHop(e); err == nil && a.String() == got {
				return
			}
		}
		t.Fatalf("%q is neither the peer nor an entry of %q", got, xff)
	})
}
