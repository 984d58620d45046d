// Package webhook sends the notifications of opened and reopened incidents to the webhooks the plane is
// configured with: a PagerDuty Events v2 body (dedup_key = incident id) or plain JSON, with bounded
// retries, every attempt recorded in the store.
//
// Webhooks come from a file given to `lexicon-plane serve --webhooks FILE`:
//
//	{"webhooks": [
//	  {"name": "pagerduty", "format": "pagerduty", "url": "https://events.pagerduty.com/v2/enqueue",
//	   "routing_key": "R0UT1NGK3Y..."},
//	  {"name": "ops", "format": "json", "url": "https://hooks.example.net/lexicon/T0K3N"}
//	]}
//
// The file holds secrets (routing keys, tokens in URLs), so it must not be readable by everyone or
// writable by anyone but its owner; the database only ever holds webhook names.
package webhook

import (
	"bytes"
	"encoding/json"
	"net/url"

	"github.com/lexicon-fleet/lexicon/plane/internal/secretfile"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Format is the shape of the body a webhook receives.
type Format string

const (
	// FormatPagerDuty is a PagerDuty Events API v2 trigger event.
	FormatPagerDuty Format = "pagerduty"
	// FormatJSON is the plane's own JSON: the event and the incident as the admin API shows it.
	FormatJSON Format = "json"
)

// Endpoint is one configured webhook.
type Endpoint struct {
	Name   string `json:"name"`
	Format Format `json:"format"`
	URL    string `json:"url"`
	// RoutingKey is the PagerDuty integration key (pagerduty format only).
	RoutingKey string `json:"routing_key,omitempty"`
}

// File is the webhooks file.
type File struct {
	Webhooks []Endpoint `json:"webhooks"`
}

// maxFile bounds the webhooks file.
const maxFile = 64 << 10

// Load reads the webhooks file at path. It refuses a file anyone else may write, or everyone may read,
// since it holds secrets.
func Load(path string) ([]Endpoint, error) {
	data, err := secretfile.Read(path, maxFile)
	if err != nil {
		return nil, errcode.New(errcode.WebhookConfigInvalid, "webhooks file: %v", err)
	}
	return Parse(data)
}

// Parse reads a webhooks file's contents, strictly: unknown fields are refused.
func Parse(data []byte) ([]Endpoint, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, errcode.Wrap(err, errcode.WebhookConfigInvalid, "the webhooks file is not the JSON it takes")
	}
	if dec.More() {
		return nil, errcode.New(errcode.WebhookConfigInvalid, "the webhooks file holds more than one JSON value")
	}
	if len(f.Webhooks) > store.MaxWebhooks {
		return nil, errcode.New(errcode.WebhookConfigInvalid, "%d webhooks, at most %d", len(f.Webhooks), store.MaxWebhooks).
			With(errcode.DetailField, "webhooks")
	}
	seen := map[string]bool{}
	for i, e := range f.Webhooks {
		bad := func(field, format string, args ...any) error {
			return errcode.New(errcode.WebhookConfigInvalid, "webhook %d: "+format, append([]any{i + 1}, args...)...).
				With(errcode.DetailField, field)
		}
		if !store.ValidWebhookName(e.Name) {
			return nil, bad("name", "name %q must be lowercase letters, digits, _ . or -, at most 63", e.Name)
		}
		if seen[e.Name] {
			return nil, bad("name", "name %q is used twice", e.Name)
		}
		seen[e.Name] = true
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			// Never quote the URL: it may carry a token.
			return nil, bad("url", "the url of %s must be an absolute http(s) URL without user info", e.Name)
		}
		switch e.Format {
		case FormatPagerDuty:
			if e.RoutingKey == "" || len(e.RoutingKey) > 128 {
				return nil, bad("routing_key", "%s needs the PagerDuty routing_key (integration key)", e.Name)
			}
		case FormatJSON:
			if e.RoutingKey != "" {
				return nil, bad("routing_key", "%s: routing_key is for the pagerduty format only", e.Name)
			}
		default:
			return nil, bad("format", "%s: format %q is not pagerduty or json", e.Name, e.Format)
		}
	}
	return f.Webhooks, nil
}

// Names returns the endpoints' names, in order.
func Names(es []Endpoint) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}
