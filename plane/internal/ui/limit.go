package ui

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed sign-ins allowed per address: SignInBurst at once, then one every SignInRefill. A token is
// 256 random bits, so the limit is not what keeps it from being guessed; it keeps one address from
// making the plane hash and look up tokens as fast as it can send them, and says so with its own code.
const (
	SignInBurst  = 10
	SignInRefill = 6 * time.Second
)

// signinLimiter counts failed sign-ins per source address in a token bucket; a successful sign-in
// costs nothing. Buckets idle for ten minutes are forgotten. Each replica counts its own.
type signinLimiter struct {
	mu      sync.Mutex
	buckets map[string]*signinBucket
	swept   time.Time
}

type signinBucket struct {
	l    *rate.Limiter
	seen time.Time
}

func newSigninLimiter() *signinLimiter {
	return &signinLimiter{buckets: map[string]*signinBucket{}}
}

func (l *signinLimiter) bucket(addr string, now time.Time) *signinBucket {
	b, ok := l.buckets[addr]
	if !ok {
		b = &signinBucket{l: rate.NewLimiter(rate.Every(SignInRefill), SignInBurst)}
		l.buckets[addr] = b
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

// wait is how long addr must wait before its next try: 0 while it has failures to spare.
func (l *signinLimiter) wait(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(addr, now)
	r := b.l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return d
}

// failed spends one of addr's failures.
func (l *signinLimiter) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bucket(addr, now).l.AllowN(now, 1)
}

// remoteHost is the address the connection came from, without its port. Forwarding headers are not
// read: a client could write any address into them.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
