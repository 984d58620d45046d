package errcode

// Codes of the webhook notifications incidents send, as the plane's delivery records them.
const (
	// NotificationNotFound: no notification has that id. Nothing changed.
	NotificationNotFound = "notification.not_found"
	// NotificationLeaseLost: a delivery's outcome came after its lease was taken over by another
	// replica (or the notification was finished). The outcome was not recorded; nothing changed.
	NotificationLeaseLost = "notification.lease_lost"
)

var areaNotification = Area{Name: "notification", Reserved: true, Codes: []Spec{
	{NotificationNotFound, statusNotFound, Unchanged},
	{NotificationLeaseLost, statusBadRequest, Unchanged},
}}
