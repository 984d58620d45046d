package store

import "time"

// Migration is a schema change recorded as applied in the lexicon_migrations table.
type Migration struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	AppliedAt time.Time `json:"applied_at"`
}
