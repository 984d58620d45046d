-- Schedules: a word run on the nodes a selector picks, on an interval (every_ms) or a cron expression.
-- next_run_at NULL means at once. The firing is claimed by moving next_run_at from the value the
-- replica saw, so one firing is claimed once however many replicas look.
CREATE TABLE schedules (
    id           text PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    word         text NOT NULL,
    params       json NOT NULL,
    selector     text NOT NULL,
    every_ms     bigint NOT NULL DEFAULT 0 CHECK (every_ms >= 0),
    cron         text NOT NULL DEFAULT '',
    paused       boolean NOT NULL DEFAULT false,
    role         text NOT NULL,
    created_by   text NOT NULL,
    updated_by   text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_queued  integer NOT NULL DEFAULT 0,
    last_skipped integer NOT NULL DEFAULT 0,
    last_failed  integer NOT NULL DEFAULT 0,
    last_message text NOT NULL DEFAULT '',
    CHECK ((every_ms > 0) <> (cron <> ''))
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;

-- The fleet's default: every node that has packages_report runs it hourly (the others are skipped and
-- counted). Made once, here, so an admin who edits, pauses or deletes it is not overruled at start.
INSERT INTO schedules (id, name, word, params, selector, every_ms, role, created_by, updated_by, created_at, updated_at)
VALUES ('sched_default_packages_report', 'packages-report', 'packages_report', '{}', 'all', 3600000, 'operator', 'plane', 'plane', now(), now());

-- The fleet security view finds each node's newest completed report of a word with one probe.
CREATE INDEX jobs_word_completed ON jobs (node_id, word, id) WHERE state = 'completed';
