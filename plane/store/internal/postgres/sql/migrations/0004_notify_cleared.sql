-- A webhook that heard an incident open also hears it clear (PagerDuty resolves the alert it opened),
-- so notifications gain the kind 'cleared'.
ALTER TABLE notifications DROP CONSTRAINT notifications_kind_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_kind_check CHECK (kind IN ('opened', 'reopened', 'cleared'));
