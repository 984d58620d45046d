package health

import (
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// routeWindow is how many minutes of counts a replica keeps in memory and sends with each heartbeat:
// more than the detector reads, so a heartbeat that failed is made good by the next.
const routeWindow = 10 * time.Minute

// RouteCounts counts, per chi route pattern and minute, the requests this replica answered and those it
// answered with a 5xx status. Requests that matched no route are counted under "unmatched", so a
// scanner's 404s cannot grow the table without bound.
type RouteCounts struct {
	now func() time.Time

	mu     sync.Mutex
	counts map[routeMinute]*count
}

type routeMinute struct {
	route  string
	minute time.Time
}

type count struct {
	requests, failures int64
	codes              map[int]int64
}

// NewRouteCounts makes an empty counter; now nil means time.Now.
func NewRouteCounts(now func() time.Time) *RouteCounts {
	if now == nil {
		now = time.Now
	}
	return &RouteCounts{now: now, counts: map[routeMinute]*count{}}
}

// Count is the middleware: it serves the request, then counts its answer under the route that
// matched. Use it on the router itself, so the pattern is the whole path chi matched.
func (c *RouteCounts) Count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if p := rc.RoutePattern(); p != "" {
				route = r.Method + " " + p
			}
		}
		c.Add(route, sw.status)
	})
}

// Add counts one answer of route with status.
func (c *RouteCounts) Add(route string, status int) {
	k := routeMinute{route: route, minute: c.now().UTC().Truncate(time.Minute)}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.counts[k]
	if n == nil {
		n = &count{codes: map[int]int64{}}
		c.counts[k] = n
	}
	n.requests++
	if status >= 500 {
		n.failures++
		n.codes[status]++
	}
}

// Snapshot returns the running totals of the last minutes (older ones are dropped), for a heartbeat.
func (c *RouteCounts) Snapshot() []store.RouteCount {
	since := c.now().UTC().Add(-routeWindow)
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.RouteCount, 0, len(c.counts))
	for k, n := range c.counts {
		if k.minute.Before(since) {
			delete(c.counts, k)
			continue
		}
		codes := make(map[int]int64, len(n.codes))
		for s, v := range n.codes {
			codes[s] = v
		}
		out = append(out, store.RouteCount{Route: k.route, Minute: k.minute, Requests: n.requests, Failures: n.failures, Codes: codes})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Route != out[j].Route {
			return out[i].Route < out[j].Route
		}
		return out[i].Minute.Before(out[j].Minute)
	})
	if len(out) > store.MaxRoutesPerHeartbeat {
		out = out[len(out)-store.MaxRoutesPerHeartbeat:]
	}
	return out
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush passes through, so long polls and streams still flush.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
