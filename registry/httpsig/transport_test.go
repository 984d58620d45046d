package httpsig

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// planeHandler verifies every request and answers with the proven keyid or the refusal's envelope.
func planeHandler(v *Verifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		proof, err := v.Verify(r, body, time.Now())
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(errcode.From(err, "internal").Envelope())
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"keyid": proof.KeyID})
	})
}

func post(t *testing.T, c *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTransportOverTLS signs with the RoundTripper through a real TLS server: the verifier takes the
// scheme from the connection and the authority from Host.
func TestTransportOverTLS(t *testing.T) {
	f := newFixture(t)
	f.nonces.now = time.Now
	srv := httptest.NewTLSServer(planeHandler(f.v))
	defer srv.Close()
	// srv.Client() is one shared client: wrap its transport in a new one.
	c := &http.Client{Transport: NewSigner(f.node, nil).Transport(srv.Client().Transport)}
	for i := 0; i < 3; i++ { // fresh nonce each time
		code, body := post(t, c, srv.URL+"/api/v1/agent/claim?wait=25", `{"idle":true}`)
		if code != http.StatusOK || !strings.Contains(body, KeyID(f.node.Public())) {
			t.Fatalf("signed request: %d %s", code, body)
		}
	}
	// GET with no body is signed with the digest of the empty body.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/agent/artifact?sha256=00", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("signed GET: %d", resp.StatusCode)
	}
	// Without the signer the plane refuses.
	code, body := post(t, srv.Client(), srv.URL+"/api/v1/agent/claim", `{}`)
	if code != http.StatusUnauthorized || !strings.Contains(body, errcode.ChannelUnsigned) {
		t.Fatalf("unsigned request: %d %s", code, body)
	}
}

// TestBehindProxy puts the plane behind a TLS-terminating reverse proxy that strips a path prefix and
// rewrites Host: the agent signs https://example.com/lexicon/..., the plane sees plain HTTP on
// 127.0.0.1 at /api/..., and Verifier.Base restores the URL the agent signed.
func TestBehindProxy(t *testing.T) {
	f := newFixture(t)
	f.nonces.now = time.Now
	base, _ := url.Parse("https://example.com/lexicon/")
	f.v.Base = base
	plane := httptest.NewServer(planeHandler(f.v))
	defer plane.Close()
	planeURL, _ := url.Parse(plane.URL)
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(planeURL)
		pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, "/lexicon")
		pr.Out.URL.RawPath = ""
	}})
	defer proxy.Close()

	tr := proxy.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, proxy.Listener.Addr().String())
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "example.com"}
	c := &http.Client{Transport: NewSigner(f.node, nil).Transport(tr)}

	code, body := post(t, c, "https://example.com/lexicon/api/v1/agent/claim?wait=25", `{"idle":true}`)
	if code != http.StatusOK {
		t.Fatalf("through the proxy: %d %s", code, body)
	}
	// A request signed for another prefix is refused even though it reaches the same handler.
	code, body = post(t, c, "https://example.com/other/api/v1/agent/claim", `{}`)
	if code != http.StatusUnauthorized || !strings.Contains(body, errcode.ChannelSignatureInvalid) {
		t.Fatalf("wrong prefix: %d %s", code, body)
	}
}
