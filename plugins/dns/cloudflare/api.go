package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The Cloudflare API v4 shapes this driver uses. Every answer is an envelope:
//
//	{"success": true, "errors": [], "messages": [], "result": ..., "result_info": {"page": 1, "per_page": 100, "count": 1, "total_count": 1, "total_pages": 1}}
//
// and a failure lists {"code": 9005, "message": "..."} in errors.

type envelope struct {
	Success    bool            `json:"success"`
	Errors     []apiError      `json:"errors"`
	Result     json.RawMessage `json:"result"`
	ResultInfo *resultInfo     `json:"result_info"`
}

type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type resultInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
	TotalPages int `json:"total_pages"`
}

type zone struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// record is a DNS record as Cloudflare stores it. Data carries the structured fields of SRV and CAA.
type record struct {
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Content  string          `json:"content,omitempty"`
	TTL      int             `json:"ttl"`
	Priority *uint16         `json:"priority,omitempty"`
	Proxied  *bool           `json:"proxied,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

type srvData struct {
	Priority uint16 `json:"priority"`
	Weight   uint16 `json:"weight"`
	Port     uint16 `json:"port"`
	Target   string `json:"target"`
}

type caaData struct {
	Flags int    `json:"flags"`
	Tag   string `json:"tag"`
	Value string `json:"value"`
}

// Cloudflare error codes this driver gives their own meaning.
const (
	cfAuthError        = 10000 // authentication error
	cfInvalidToken     = 9109  // invalid access token
	cfRecordNotFound   = 81044 // record does not exist
	cfRecordExists     = 81057 // record already exists
	cfIdenticalExists  = 81058 // an identical record already exists
	cfCNAMEConflict    = 81053 // an A, AAAA or CNAME record with that host already exists
	cfRateLimited      = 971   // please wait and consider throttling your request speed
	maxBody            = 16 << 20
	maxRateLimitTries  = 4
	maxRetryAfterWait  = 30 * time.Second
	defaultRecordsPage = 100
	zonesPage          = 50
)

// api is a Cloudflare API client for one account.
type api struct {
	base  *url.URL
	token driver.Secret
	http  *http.Client
}

// do sends one request and decodes the envelope, retrying a 429 after the Retry-After the API gives
// (a few times, each wait capped), and returns a coded error for any failure.
func (a *api) do(ctx context.Context, method, path string, query url.Values, body any) (*envelope, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, errcode.Wrap(err, errcode.DNSInvalid, "cannot encode the request")
		}
	}
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	for try := 1; ; try++ {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
		if err != nil {
			return nil, errcode.Wrap(err, errcode.DNSInvalid, "cannot build the request")
		}
		req.Header.Set("Authorization", "Bearer "+a.token.Reveal())
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := a.http.Do(req)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare did not answer %s %s", method, path)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err != nil {
			return nil, errcode.Wrap(err, errcode.DNSUnavailable, "cannot read Cloudflare's answer to %s %s", method, path)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			wait := retryAfter(resp.Header.Get("Retry-After"))
			if try >= maxRateLimitTries || wait > maxRetryAfterWait {
				return nil, errcode.New(errcode.DNSRateLimited, "Cloudflare rate-limited %s %s %d times", method, path, try).
					With(errcode.DetailRetryAfterSeconds, int(wait/time.Second))
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, errcode.Wrap(ctx.Err(), errcode.DNSRateLimited, "Cloudflare rate-limited %s %s", method, path)
			case <-timer.C:
			}
			continue
		}
		var env envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return nil, errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare answered %s %s with %d and no JSON envelope", method, path, resp.StatusCode)
		}
		if resp.StatusCode >= 300 || !env.Success {
			return nil, statusError(resp.StatusCode, env.Errors, method, path)
		}
		return &env, nil
	}
}

// retryAfter reads a Retry-After header in seconds (default one second).
func retryAfter(h string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

// statusError codes a failed answer by its HTTP status and Cloudflare's error codes.
func statusError(status int, errs []apiError, method, path string) error {
	var msgs []string
	codes := map[int]bool{}
	for _, e := range errs {
		msgs = append(msgs, fmt.Sprintf("%d %s", e.Code, e.Message))
		codes[e.Code] = true
	}
	msg := fmt.Sprintf("Cloudflare refused %s %s (HTTP %d: %s)", method, path, status, strings.Join(msgs, "; "))
	var code string
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || codes[cfAuthError] || codes[cfInvalidToken]:
		code = errcode.DNSAuth
	case codes[cfRateLimited]:
		code = errcode.DNSRateLimited
	case status == http.StatusNotFound || codes[cfRecordNotFound]:
		code = errcode.DNSNotFound
	case codes[cfRecordExists] || codes[cfIdenticalExists] || codes[cfCNAMEConflict] || status == http.StatusConflict:
		code = errcode.DNSConflict
	case status >= 500:
		code = errcode.DNSUnavailable
	case status >= 400:
		code = errcode.DNSInvalid
	default:
		code = errcode.DNSUnavailable
	}
	e := errcode.New(code, "%s", msg).With(errcode.DetailHTTPStatus, status)
	if len(errs) > 0 {
		e.With(errcode.DetailProviderCode, errs[0].Code)
	}
	return e
}

// pages fetches every page of a list, calling each with a page's raw result.
func (a *api) pages(ctx context.Context, path string, query url.Values, perPage int, each func(json.RawMessage) error) error {
	for page := 1; ; page++ {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(page))
		q.Set("per_page", strconv.Itoa(perPage))
		env, err := a.do(ctx, http.MethodGet, path, q, nil)
		if err != nil {
			return err
		}
		if err := each(env.Result); err != nil {
			return err
		}
		if env.ResultInfo == nil || page >= env.ResultInfo.TotalPages || env.ResultInfo.Count == 0 {
			return nil
		}
		if page > 10000 {
			return errcode.New(errcode.DNSUnavailable, "Cloudflare's list of %s never ends", path)
		}
	}
}
