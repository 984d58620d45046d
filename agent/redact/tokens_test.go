package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRandomTokensCaught measures the token rule on random keys of common alphabets and lengths,
// each written into a sentence. The seed is fixed, so the figures are reproducible; the floors are
// the rule's documented promise.
func TestRandomTokensCaught(t *testing.T) {
	const (
		b64    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		hex    = "0123456789abcdef"
		alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	)
	r := rand.New(rand.NewPCG(4, 2))
	for _, tc := range []struct {
		name     string
		alphabet string
		length   int
		floor    float64 // least fraction caught
	}{
		// Misses at 32 are mostly keys with a '/' at either end, whose stretch is 31 characters.
		{"base64 32", b64, 32, 0.95},
		{"base64 44", b64, 44, 0.998},
		{"base64url 43", b64url, 43, 0.995},
		{"hex 32", hex, 32, 0.99},
		{"hex 40", hex, 40, 0.999},
		{"hex 64", hex, 64, 1},
		{"alnum 40", alnum, 40, 0.999},
		{"alnum 64", alnum, 64, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 5000
			caught := 0
			var missed []string
			for k := 0; k < n; k++ {
				b := make([]byte, tc.length)
				for i := range b {
					b[i] = tc.alphabet[r.IntN(len(tc.alphabet))]
				}
				out, _ := Text("the key is " + string(b) + " here")
				if !strings.Contains(out, string(b)) && strings.Contains(out, tokenMarker) {
					caught++
				} else if len(missed) < 5 {
					missed = append(missed, string(b))
				}
			}
			rate := float64(caught) / n
			t.Logf("%s: caught %.2f%%", tc.name, 100*rate)
			if rate < tc.floor {
				t.Fatalf("caught %.2f%%, below %.2f%%; missed e.g. %q", 100*rate, 100*tc.floor, missed)
			}
		})
	}
}
