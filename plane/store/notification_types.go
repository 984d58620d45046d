package store

import "time"

// NotificationState is where a notification stands. Delivered and failed are final.
type NotificationState string

const (
	NotificationPending   NotificationState = "pending"
	NotificationDelivered NotificationState = "delivered"
	NotificationFailed    NotificationState = "failed"
)

// Defaults of delivery.
const (
	DefaultNotificationLease    = 2 * time.Minute
	DefaultNotificationAttempts = 5
)

// Notification is one incident event on its way to one webhook.
type Notification struct {
	ID         string            `json:"id"`
	IncidentID string            `json:"incident_id"`
	EventSeq   int               `json:"event_seq"`
	Webhook    string            `json:"webhook"`
	Kind       EventKind         `json:"kind"` // opened, reopened or cleared
	State      NotificationState `json:"state"`
	Attempts   int               `json:"attempts"`
	NextAt     time.Time         `json:"next_at"`
	LastError  string            `json:"last_error,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt time.Time         `json:"finished_at,omitzero"`
	// Lease is the token of the claim that holds the notification; NotificationRecord needs it.
	Lease string `json:"-"`
	// History is every attempt, oldest first (NotificationList only).
	History []NotificationAttempt `json:"history,omitempty"`
}

// NotificationAttempt is one try at delivering.
type NotificationAttempt struct {
	Attempt  int       `json:"attempt"`
	At       time.Time `json:"at"`
	Status   int       `json:"status,omitempty"` // the webhook's HTTP status; 0 when it gave none
	Error    string    `json:"error,omitempty"`
	Duration int64     `json:"duration_ms"`
}

type NotificationClaimParams struct {
	Webhooks    []string // the webhooks this replica can deliver to
	Now         time.Time
	Lease       time.Duration // 0: DefaultNotificationLease
	Limit       int           // 0: 10
	MaxAttempts int           // 0: DefaultNotificationAttempts
}

type NotificationRecordParams struct {
	ID        string
	Lease     string
	Delivered bool
	Status    int
	Error     string
	Duration  time.Duration
	// RetryAt is when to try again after a failure; zero fails the notification for good.
	RetryAt time.Time
	Now     time.Time
}

type NotificationListParams struct {
	IncidentID string
}
