package store

import "time"

// Enrolment is a one-time join token minted for a machine that already exists (lexicon nodes
// install-command): the machine fetches its agent with it and joins with it, as a provisioned machine
// does with its provisioning's token, and the join it makes is approved at once (Approve) or left for a
// person. Its token's hash is never returned.
type Enrolment struct {
	ID        string            `json:"id"`
	Labels    map[string]string `json:"labels,omitempty"`
	Approve   bool              `json:"approve"`
	ExpiresAt time.Time         `json:"expires_at"`
	UsedAt    time.Time         `json:"used_at,omitzero"`
	JoinID    string            `json:"join_id,omitempty"`
	CreatedBy string            `json:"created_by"`
	CreatedAt time.Time         `json:"created_at"`
}

type EnrolmentCreateParams struct {
	TokenHash string // lowercase hex sha256 of the token
	Labels    map[string]string
	Approve   bool
	ExpiresAt time.Time
	By        string
	Now       time.Time
}

type EnrolmentTokenParams struct {
	TokenHash string
	// JoinID, for EnrolmentTokenUse: the join the token is spent on.
	JoinID string
	Now    time.Time
}
