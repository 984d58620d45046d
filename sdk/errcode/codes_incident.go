package errcode

// Codes of incidents and the webhook notifications they send.
const (
	// IncidentNotFound: no incident has that id. Nothing changed.
	IncidentNotFound = "incident.not_found"
	// NotificationNotFound: no notification has that id. Nothing changed.
	NotificationNotFound = "notification.not_found"
	// NotificationLeaseLost: a delivery's outcome came after its lease was taken over by another
	// replica (or the notification was finished). The outcome was not recorded; nothing changed.
	NotificationLeaseLost = "notification.lease_lost"
	// WebhookConfigInvalid: the plane's webhooks file cannot be read, is writable by others or
	// readable by everyone, or is not the JSON it takes (details.field). The plane did not start.
	WebhookConfigInvalid = "webhook.config_invalid"
	// WebhookDeliveryFailed: a webhook did not accept a notification (details.status, when it
	// answered). It is recorded on the notification's attempt; the notification is retried until its
	// attempts run out.
	WebhookDeliveryFailed = "webhook.delivery_failed"
)
