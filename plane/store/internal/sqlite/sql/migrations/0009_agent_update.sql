-- Where each node's self-update stands, as its last claim reported it: the state (none, current,
-- pending, trial, fetch_failed, verify_failed, probe_failed, rejected; '' for an agent that does not
-- update itself), the version on offer, and the whole report (reason, floor, history) as JSON.
ALTER TABLE nodes ADD COLUMN update_state TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN update_offered TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN update_report TEXT NOT NULL DEFAULT '{}';
