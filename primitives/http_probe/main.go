// Command http_probe is the word that checks the node's own site: the status and timing of one URL on
// one of the node's own names, without following redirects.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

type params struct {
	URL          string `json:"url"`
	Method       string `json:"method"`
	ExpectStatus int    `json:"expect_status"`
}

type timing struct {
	DNSMS       float64 `json:"dns_ms"`
	ConnectMS   float64 `json:"connect_ms"`
	TLSMS       float64 `json:"tls_ms"`
	FirstByteMS float64 `json:"first_byte_ms"`
	TotalMS     float64 `json:"total_ms"`
}

type output struct {
	URL        string `json:"url"`
	Status     int    `json:"status"`
	Healthy    bool   `json:"healthy"`
	Proto      string `json:"proto"`
	Location   string `json:"location,omitempty"`
	RemoteAddr string `json:"remote_addr"`
	BodyBytes  int    `json:"body_bytes"`
	Truncated  bool   `json:"truncated"`
	Timing     timing `json:"timing"`
}

func main() {
	word.Run(func(p params) (output, error) {
		r, err := word.HTTP().Do(word.HTTPRequest{URL: p.URL, Method: p.Method,
			Headers: map[string]string{"User-Agent": "lexicon-http-probe/1"}})
		if err != nil {
			return output{}, err
		}
		healthy := r.Status >= 200 && r.Status < 400
		if p.ExpectStatus != 0 {
			healthy = r.Status == p.ExpectStatus
		}
		t := r.Timing
		return output{
			URL: p.URL, Status: r.Status, Healthy: healthy, Proto: r.Proto, Location: r.Headers["Location"],
			RemoteAddr: r.RemoteAddr, BodyBytes: len(r.Body), Truncated: r.Truncated,
			Timing: timing{t.DNSMS, t.ConnectMS, t.TLSMS, t.FirstByteMS, t.TotalMS},
		}, nil
	})
}
