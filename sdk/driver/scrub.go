package driver

import (
	"encoding/json"
	"strings"
	"sync"
)

// minScrubLen is the shortest secret the Scrubber replaces: shorter strings would blank ordinary
// words, and no real credential is that short.
const minScrubLen = 6

// Scrubber replaces known secret values in text before it leaves the process (errors over gRPC, log
// lines). It is the second line of defence: Secret keeps credentials out of formatting, the Scrubber
// catches the ones a provider's SDK copied into an error message. The zero value is ready to use.
type Scrubber struct {
	mu      sync.RWMutex
	secrets []string
}

// Add makes s a value to scrub, with its JSON-escaped form.
func (sc *Scrubber) Add(s Secret) {
	v := s.Reveal()
	if len(v) < minScrubLen {
		return
	}
	forms := []string{v}
	if b, err := json.Marshal(v); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != v {
			forms = append(forms, esc)
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, f := range forms {
		if !contains(sc.secrets, f) {
			sc.secrets = append(sc.secrets, f)
		}
	}
}

// Scrub returns text with every known secret replaced by Redacted.
func (sc *Scrubber) Scrub(text string) string {
	if sc == nil {
		return text
	}
	sc.mu.RLock()
	defer sc.mu.RUnlock()
	for _, s := range sc.secrets {
		if strings.Contains(text, s) {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	return text
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
