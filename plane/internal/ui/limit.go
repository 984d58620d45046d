package ui

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// SignInMaxBody caps a sign-in's body: the form is a token and a CSRF token, far below it. The cap is
// the sign-in's own, read before anything else of the request, since no session bounds it yet.
const SignInMaxBody = 4 << 10

// Failed sign-ins allowed per client address: SignInBurst at once, then one every SignInRefill. A token is
// 256 random bits, so the limit is not what keeps it from being guessed; it keeps one address from
// making the plane hash and look up tokens as fast as it can send them, and says so with its own code.
const (
	SignInBurst  = 10
	SignInRefill = 6 * time.Second
)

// signinLimiter counts failed sign-ins per source address in a token bucket. Every try takes a token
// before its token is looked up and a success gives it back, so concurrent tries cannot spend more
// than the bucket holds. Buckets idle for ten minutes are forgotten. Each replica counts its own.
type signinLimiter struct {
	mu      sync.Mutex
	buckets map[string]*signinBucket
	swept   time.Time
}

type signinBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	seen   time.Time
}

func newSigninLimiter() *signinLimiter {
	return &signinLimiter{buckets: map[string]*signinBucket{}}
}

// bucket returns addr's bucket refilled to now; l.mu is held.
func (l *signinLimiter) bucket(addr string, now time.Time) *signinBucket {
	b, ok := l.buckets[addr]
	if !ok {
		b = &signinBucket{tokens: SignInBurst, at: now}
		l.buckets[addr] = b
	}
	if now.After(b.at) {
		b.tokens = min(SignInBurst, b.tokens+float64(now.Sub(b.at))/float64(SignInRefill))
		b.at = now
	}
	b.seen = now
	if now.Sub(l.swept) > time.Minute {
		for k, v := range l.buckets {
			if now.Sub(v.seen) > 10*time.Minute {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	return b
}

// take spends one of addr's tries, or says how long until it has one.
func (l *signinLimiter) take(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(addr, now)
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(SignInRefill))
}

// refund gives back the try of a sign-in that succeeded.
func (l *signinLimiter) refund(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(addr, now)
	b.tokens = min(SignInBurst, b.tokens+1)
}

// clientAddr is the address a sign-in is counted under: the connection's, unless the connection comes
// from a trusted proxy (Config.TrustedProxies); then X-Forwarded-For is read from the right, past every
// trusted address, and the first untrusted one is the client. Entries to its left were written by the
// client itself and are never read. If every entry is a trusted proxy, the left-most is taken; an entry
// that is not an address stops the walk at the last trusted one, so a garbled header cannot make a
// client new.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	peer := remoteHost(r)
	addr, err := netip.ParseAddr(peer)
	if err != nil || !isTrusted(addr, trusted) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := parseHop(hops[i])
		if err != nil {
			break
		}
		addr = hop
		if !isTrusted(hop, trusted) {
			break
		}
	}
	return addr.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads one X-Forwarded-For entry: an address, or (as some proxies write it) an address
// and port.
func parseHop(s string) (netip.Addr, error) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap().WithZone(""), nil
}

// remoteHost is the address the connection came from, without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
