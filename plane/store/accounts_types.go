package store

import (
	"encoding/json"
	"regexp"
	"time"
)

// Account is a driver account: a driver, its settings, and a credential the plane sealed under its
// master key. The sealed credential never leaves the store through JSON, and only AccountGet reads it.
type Account struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Driver   string          `json:"driver"`
	Settings json.RawMessage `json:"settings"`
	// KeyID names the master key that sealed the credential, so that a replica holding another key
	// says so instead of failing to open it.
	KeyID     string    `json:"key_id"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	// Test marks an account that holds only throwaway instances: automation may make destructive calls
	// there without the instance carrying its tag (the safety catch).
	Test bool `json:"test"`
	// Sealed is the credential as the plane sealed it; set by AccountGet only.
	Sealed []byte `json:"-"`
}

// Account limits.
const (
	MaxAccountSettings  = 64 << 10
	MaxSealedCredential = 80 << 10
)

// accountNameRE is an account's name: how operators and commands address it.
var accountNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidAccountName reports whether name can name an account.
func ValidAccountName(name string) bool { return accountNameRE.MatchString(name) }

type AccountCreateParams struct {
	Name     string
	Driver   string
	Settings json.RawMessage // a JSON object
	Sealed   []byte
	KeyID    string
	Test     bool
	By       string
	Now      time.Time
}

type AccountGetParams struct {
	Name string
}

type AccountListParams struct {
	Driver string // "" for every driver
}

type AccountRemoveParams struct {
	Name string
}

type AccountSetTestParams struct {
	Name string
	Test bool
}
