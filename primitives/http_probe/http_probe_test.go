package main_test

import (
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/http_probe.wasm"

type probe struct {
	Status   int
	Healthy  bool
	Location string
	Timing   struct {
		TotalMS float64 `json:"total_ms"`
		TLSMS   float64 `json:"tls_ms"`
	}
}

func TestProbeOwnSite(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != "lexicon-http-probe/1" {
			http.Error(w, "who are you", http.StatusForbidden)
			return
		}
		w.Write([]byte("ok"))
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	mux.Handle("/old", http.RedirectHandler("/new", http.StatusMovedPermanently))
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	self := strings.TrimPrefix(srv.URL, "https://")
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSelf(self), wordtest.WithRootCAs(roots))

	var p probe
	w.Must(map[string]any{"url": srv.URL + "/"}, &p)
	if p.Status != 200 || !p.Healthy || p.Timing.TotalMS <= 0 || p.Timing.TLSMS <= 0 {
		t.Fatalf("%+v", p)
	}
	w.Must(map[string]any{"url": srv.URL + "/down"}, &p)
	if p.Status != 502 || p.Healthy {
		t.Fatalf("%+v", p)
	}
	w.Must(map[string]any{"url": srv.URL + "/old", "expect_status": 301}, &p)
	if p.Status != 301 || !p.Healthy || p.Location != "/new" {
		t.Fatalf("%+v", p)
	}
	if res := w.Run(map[string]any{"url": "https://example.com/"}); res.Code != errcode.CapabilityDenied {
		t.Fatalf("not our site: %s", res.Code)
	}
}
