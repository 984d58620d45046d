package server

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// limiter is a token bucket per key (a node id, or a source address), forgotten when idle so that
// addresses seen once do not accumulate.
type limiter struct {
	rate  rate.Limit
	burst int
	// refused, when not nil, counts each refusal (the plane's metrics).
	refused func()

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	l    *rate.Limiter
	seen time.Time
}

func newLimiter(perSecond float64, burst int) *limiter {
	return &limiter{rate: rate.Limit(perSecond), burst: burst, buckets: map[string]*bucket{}}
}

// allow takes one token for key, or returns request.rate_limited.
func (l *limiter) allow(key string, now time.Time) error {
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{l: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
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
	r := b.l.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay > 0 {
		r.CancelAt(now)
	}
	l.mu.Unlock()
	if delay > 0 {
		if l.refused != nil {
			l.refused()
		}
		return errcode.New(errcode.RequestRateLimited, "too many requests; retry in %s", delay.Round(time.Millisecond)).
			With(errcode.DetailRetryAfterMS, delay.Milliseconds())
	}
	return nil
}
