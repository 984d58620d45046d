package ui

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// planeData is the plane's own health: its replicas as GET /plane/status (and lexicon plane status)
// reports them.
type planeData struct {
	api.PlaneStatus
	Now     time.Time
	Missing int
}

func (u *UI) planeStatus(w http.ResponseWriter, r *http.Request) {
	d := planeData{Now: u.cfg.Now()}
	var err error
	if d.PlaneStatus, err = run(u, r, api.PlaneShowStatus, planeStatus(u.cfg.Health), struct{}{}); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	for _, rep := range d.Replicas {
		if rep.Missing {
			d.Missing++
		}
	}
	u.page(w, r, "plane", d)
}

func (u *UI) replicaForget(w http.ResponseWriter, r *http.Request) {
	if _, err := run(u, r, api.PlaneForgetReplica, u.cfg.Health.Forget, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/plane", http.StatusSeeOther)
}

// bytesText writes a byte count as people read it.
func bytesText(n int64) string {
	if n <= 0 {
		return "—"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// share is part of whole as a whole percentage, or "" when whole is unknown.
func share(part, whole int64) string {
	if whole <= 0 {
		return ""
	}
	return fmt.Sprintf("%d%%", part*100/whole)
}

// ago is how long before now t was, to the second.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Truncate(time.Second).String() + " ago"
}
