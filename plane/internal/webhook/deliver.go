package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Delivery defaults.
const (
	DefaultTimeout = 10 * time.Second
	firstBackoff   = 10 * time.Second
	maxBackoff     = 10 * time.Minute
	claimBatch     = 10
	maxBatches     = 20 // per pass, so one pass ends even if the outbox is long
)

// Backoff is the wait after a failed attempt: 10 s, 30 s, 1.5 min, 4.5 min, then at most 10 min.
func Backoff(attempt int) time.Duration {
	d := firstBackoff
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 3
	}
	return min(d, maxBackoff)
}

// Store is what delivery reads and writes: the notification outbox, and the incidents it tells of.
type Store interface {
	NotificationClaim(ctx context.Context, p store.NotificationClaimParams) ([]store.Notification, error)
	NotificationRecord(ctx context.Context, p store.NotificationRecordParams) (store.Notification, error)
	NotificationList(ctx context.Context, p store.NotificationListParams) ([]store.Notification, error)
	IncidentGet(ctx context.Context, p store.IncidentGetParams) (store.Incident, error)
}

// Deliverer sends due notifications to this plane's webhooks. Every replica may run one: the store's
// leases keep two from sending one notification at once.
type Deliverer struct {
	Store     Store
	Endpoints []Endpoint
	// Client sends the requests; nil means a client with DefaultTimeout. Its timeout must stay well
	// under the lease, or a slow webhook could see a notification twice.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// MaxAttempts bounds the attempts per notification; 0 means store.DefaultNotificationAttempts.
	MaxAttempts int
	// Backoff is the wait after failed attempt n; nil means Backoff.
	Backoff func(attempt int) time.Duration
	// Lease is how long a claimed notification is this replica's; 0 means store.DefaultNotificationLease.
	Lease time.Duration
	// Metrics counts the attempts by outcome (nil: not counted).
	Metrics *metrics.Plane
}

func (d *Deliverer) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Deliverer) log() *slog.Logger { return services.Logger(d.Log) }

func (d *Deliverer) maxAttempts() int {
	if d.MaxAttempts > 0 {
		return d.MaxAttempts
	}
	return store.DefaultNotificationAttempts
}

// DeliverDue makes one attempt at each notification due now, and returns how many it attempted.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	if len(d.Endpoints) == 0 {
		return 0, nil
	}
	byName := map[string]Endpoint{}
	for _, e := range d.Endpoints {
		byName[e.Name] = e
	}
	attempted := 0
	for range maxBatches {
		list, err := d.Store.NotificationClaim(ctx, store.NotificationClaimParams{
			Webhooks: Names(d.Endpoints), Now: d.now(), Lease: d.Lease, Limit: claimBatch, MaxAttempts: d.maxAttempts(),
		})
		if err != nil {
			return attempted, err
		}
		for _, n := range list {
			d.deliver(ctx, byName[n.Webhook], n)
			attempted++
		}
		if len(list) < claimBatch {
			break
		}
	}
	return attempted, nil
}

// deliver makes one attempt and records its outcome.
func (d *Deliverer) deliver(ctx context.Context, e Endpoint, n store.Notification) {
	log := d.log().With("notification", n.ID, "incident", n.IncidentID, "webhook", n.Webhook, "attempt", n.Attempts)
	start := time.Now()
	status, err := d.send(ctx, e, n)
	rec := store.NotificationRecordParams{ID: n.ID, Lease: n.Lease, Status: status, Duration: time.Since(start)}
	retry := true
	switch {
	case err == nil:
		rec.Delivered = true
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		retry = false // the webhook refused the event itself; sending it again cannot help
	}
	if err != nil {
		rec.Error = clean(err.Error())
		if retry && n.Attempts < d.maxAttempts() {
			b := Backoff
			if d.Backoff != nil {
				b = d.Backoff
			}
			rec.RetryAt = d.now().Add(b(n.Attempts))
		}
	}
	rec.Now = d.now()
	if _, rerr := d.Store.NotificationRecord(ctx, rec); rerr != nil {
		log.Warn("notification outcome not recorded", "err", rerr, "delivered", rec.Delivered)
		return
	}
	switch {
	case rec.Delivered:
		log.Info("notification delivered", "status", status)
		d.Metrics.WebhookDelivery(n.Webhook, metrics.DeliveryDelivered)
	case !rec.RetryAt.IsZero():
		log.Warn("notification failed; will retry", "status", status, "err", rec.Error, "retry_at", rec.RetryAt)
		d.Metrics.WebhookDelivery(n.Webhook, metrics.DeliveryRetry)
	default:
		log.Error("notification failed for good", "status", status, "err", rec.Error)
		d.Metrics.WebhookDelivery(n.Webhook, metrics.DeliveryFailed)
	}
}

// send posts the notification's body and returns the webhook's status.
func (d *Deliverer) send(ctx context.Context, e Endpoint, n store.Notification) (int, error) {
	if e.Name == "" {
		return 0, errcode.New(errcode.WebhookDeliveryFailed, "this replica has no webhook %s", n.Webhook)
	}
	inc, err := d.Store.IncidentGet(ctx, store.IncidentGetParams{ID: n.IncidentID, Now: d.now()})
	if err != nil {
		return 0, err
	}
	if n.Kind == store.EventCleared {
		if err := d.afterEarlier(ctx, n); err != nil {
			return 0, err
		}
	}
	body, err := Body(e, n, inc)
	if err != nil {
		return 0, errcode.Wrap(err, errcode.WebhookDeliveryFailed, "cannot build the body")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return 0, errcode.New(errcode.WebhookDeliveryFailed, "the url of webhook %s cannot be used", e.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lexicon-plane")
	req.Header.Set("Idempotency-Key", n.ID)
	client := d.Client
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		// The url.Error quotes the URL, which may hold a token: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, errcode.New(errcode.WebhookDeliveryFailed, "%s: %v", e.Name, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, errcode.New(errcode.WebhookDeliveryFailed, "%s answered %s: %s", e.Name, resp.Status,
			strings.TrimSpace(string(answer))).With(errcode.DetailStatus, resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// afterEarlier refuses to send a cleared notification while an earlier one of the same incident to the
// same webhook is still pending: a resolve that overtook a trigger in backoff would leave PagerDuty
// with an alert nothing resolves. The attempt is retried with the usual backoff; the earlier
// notification started first on the same schedule, so it is delivered or failed before this one runs
// out of attempts.
func (d *Deliverer) afterEarlier(ctx context.Context, n store.Notification) error {
	list, err := d.Store.NotificationList(ctx, store.NotificationListParams{IncidentID: n.IncidentID})
	if err != nil {
		return err
	}
	for _, e := range list {
		if e.Webhook == n.Webhook && e.EventSeq < n.EventSeq && e.State == store.NotificationPending {
			return errcode.New(errcode.WebhookDeliveryFailed, "%s: waits for notification %s of the same incident", n.Webhook, e.ID)
		}
	}
	return nil
}

// clean makes an error message storable and safe to show: valid UTF-8, no control characters, bounded.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 1024 {
		s = s[:1024]
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
