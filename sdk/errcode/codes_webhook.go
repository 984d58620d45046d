package errcode

// Codes of the plane's webhooks: their configuration and their deliveries.
const (
	// WebhookConfigInvalid: the plane's webhooks file cannot be read, is writable by others or
	// readable by everyone, or is not the JSON it takes (details.field). The plane did not start.
	WebhookConfigInvalid = "webhook.config_invalid"
	// WebhookDeliveryFailed: a webhook did not accept a notification (details.status, when it
	// answered). It is recorded on the notification's attempt; the notification is retried until its
	// attempts run out.
	WebhookDeliveryFailed = "webhook.delivery_failed"
)

var areaWebhook = Area{Name: "webhook", Reserved: true, Codes: []Spec{
	{WebhookConfigInvalid, statusBadRequest, Unchanged},
	{WebhookDeliveryFailed, statusBadRequest, MaybeChanged},
}}
