package httpsig

import (
	"context"
	"net/http"
	"testing"
	"time"
)

var benchBody = []byte(`{"idle":true,"version":"1.0.0","statement":{"sequence":42,"digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"},"vocabulary":[{"name":"disk_usage","version":"1.0.0"}]}`)

// BenchmarkSign is the agent's cost per request: digest, signature base, ed25519 signature, headers.
func BenchmarkSign(b *testing.B) {
	f := newFixture(b)
	s := NewSigner(f.node, func() time.Time { return t0 })
	req := newReq(b, "POST", claimURL)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sign(req, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is the plane's cost per request: parse, key lookup (a map), ed25519 verification,
// digest, and recording the nonce in MemoryNonces. Each iteration verifies a distinct signed request,
// signed before the timer starts.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	f.nonces.now = func() time.Time { return t0 }
	s := NewSigner(f.node, func() time.Time { return t0 })
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		req := newReq(b, "POST", claimURL)
		if err := s.Sign(req, benchBody); err != nil {
			b.Fatal(err)
		}
		reqs[i] = toServer(b, req, benchBody)
		reqs[i] = reqs[i].WithContext(context.Background())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.v.Verify(reqs[i], benchBody, t0); err != nil {
			b.Fatal(err)
		}
	}
}
