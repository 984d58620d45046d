package driver

import (
	"fmt"
	"io"
	"log/slog"
)

// Redacted is what a Secret prints, marshals and logs as.
const Redacted = "[REDACTED]"

// Secret holds a credential so that formatting, JSON and slog never show it; only Reveal does, at the
// one place the provider's client needs it.
type Secret struct {
	value string
}

// NewSecret wraps a credential.
func NewSecret(value string) Secret { return Secret{value: value} }

// Reveal returns the credential itself. Call it only to hand the credential to the provider.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether no credential was given.
func (s Secret) IsZero() bool { return s.value == "" }

// String returns Redacted.
func (s Secret) String() string { return Redacted }

// GoString returns Redacted, so %#v does not reach the field either.
func (s Secret) GoString() string { return Redacted }

// Format prints Redacted for every verb, including %+v, which would otherwise print the field.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// LogValue keeps slog from printing the credential.
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalJSON encodes Redacted: a Secret never travels as JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText encodes Redacted.
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

var (
	_ fmt.Stringer   = Secret{}
	_ fmt.GoStringer = Secret{}
	_ fmt.Formatter  = Secret{}
	_ slog.LogValuer = Secret{}
)
