package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// The export is JSON lines: one api.AuditEvent per line, the intent (code "pending") and then the
// outcome under the same id, which is what a SIEM's file or HTTP collector ingests as it comes.

// File appends every event to a file as one JSON line. The file is opened for appending, so a
// rotation that copies and truncates it (logrotate's copytruncate) loses nothing the plane wrote after.
type File struct {
	mu  sync.Mutex
	f   *os.File
	log *slog.Logger
}

// OpenFile opens (or makes, readable by the plane's user only) the file at path for appending.
func OpenFile(path string, log *slog.Logger) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit file: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &File{f: f, log: log}, nil
}

// Export writes one line; a failed write is logged, and the store still holds the event.
func (x *File) Export(e api.AuditEvent) {
	line, err := json.Marshal(e)
	if err != nil {
		x.log.Error("audit event not exported", "event", e.ID, "err", err)
		return
	}
	line = append(line, '\n')
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, err := x.f.Write(line); err != nil {
		x.log.Error("audit event not exported", "event", e.ID, "file", x.f.Name(), "err", err)
	}
}

// Close closes the file.
func (x *File) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.f.Close()
}

// WebhookQueue is how many events a webhook holds while its destination is slow or down; more are
// dropped (and counted in the log), never waited for: a SIEM that is down must not stop the plane.
const WebhookQueue = 10000

// webhookBatch is the most events one POST carries.
const webhookBatch = 500

// Webhook POSTs events to a URL as application/x-ndjson, in batches, from a queue: a request never
// waits for the destination. A batch that fails is retried, with a growing pause, until it is taken;
// it is a service (Start, Stop), and Stop sends what is queued once more before it returns. Delivery is
// at least once: a batch whose answer was lost is sent again, so a collector keys events by id (and
// code, the intent and the outcome sharing an id).
type Webhook struct {
	url     string
	client  *http.Client
	log     *slog.Logger
	queue   chan api.AuditEvent
	dropped atomic.Int64

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	// Retry is the first pause after a failed batch (doubled up to a minute); 0 means a second.
	Retry time.Duration
}

// NewWebhook makes a webhook exporter to rawURL, which must be http or https. A nil client is one with
// a ten-second timeout.
func NewWebhook(rawURL string, client *http.Client, log *slog.Logger) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("audit webhook %q is not an http or https URL", rawURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Webhook{url: u.String(), client: client, log: log, queue: make(chan api.AuditEvent, WebhookQueue)}, nil
}

// Export queues an event, or drops it when the queue is full.
func (x *Webhook) Export(e api.AuditEvent) {
	select {
	case x.queue <- e:
	default:
		if n := x.dropped.Add(1); n == 1 || n%1000 == 0 {
			x.log.Error("audit webhook queue full; events dropped from the export (the store keeps them)", "dropped", n, "url", x.url)
		}
	}
}

// Start begins sending.
func (x *Webhook) Start(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done != nil {
		return fmt.Errorf("audit webhook already started")
	}
	ctx, x.cancel = context.WithCancel(context.WithoutCancel(ctx))
	x.done = make(chan struct{})
	go x.run(ctx, x.done)
	return nil
}

// Stop ends sending after one more try at what is queued, or when ctx ends.
func (x *Webhook) Stop(ctx context.Context) error {
	x.mu.Lock()
	cancel, done := x.cancel, x.done
	x.cancel, x.done = nil, nil
	x.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (x *Webhook) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	pause := x.Retry
	if pause <= 0 {
		pause = time.Second
	}
	var batch []api.AuditEvent
	for {
		if len(batch) == 0 {
			select {
			case e := <-x.queue:
				batch = append(batch, e)
			case <-ctx.Done():
				x.flush(batch)
				return
			}
		}
		batch = x.fill(batch)
		// A post in flight is not cut short by Stop: cut, it could have been taken and still be sent
		// again by the last try.
		if err := x.post(context.WithoutCancel(ctx), batch); err != nil {
			x.log.Warn("audit webhook failed; retrying", "url", x.url, "events", len(batch), "err", err)
			select {
			case <-time.After(pause):
				pause = min(2*pause, time.Minute)
			case <-ctx.Done():
				x.flush(batch)
				return
			}
			continue
		}
		batch = batch[:0]
		pause = max(x.Retry, time.Second)
	}
}

// fill adds what is queued to batch, up to a batch's size, without waiting.
func (x *Webhook) fill(batch []api.AuditEvent) []api.AuditEvent {
	for len(batch) < webhookBatch {
		select {
		case e := <-x.queue:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// flush is the last try on Stop: what is in hand and what is queued, once each.
func (x *Webhook) flush(batch []api.AuditEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		batch = x.fill(batch)
		if len(batch) == 0 {
			return
		}
		if err := x.post(ctx, batch); err != nil {
			x.log.Error("audit webhook: events left unexported at stop (the store keeps them)", "url", x.url, "err", err)
			return
		}
		batch = batch[:0]
	}
}

func (x *Webhook) post(ctx context.Context, batch []api.AuditEvent) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range batch {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := x.client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
