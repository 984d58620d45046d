-- Schedules: a word run on the nodes a selector picks, on an interval (every_ms) or a cron expression.
-- next_run_at NULL means at once. The firing is claimed by moving next_run_at from the value the
-- replica saw, so one firing is claimed once however many replicas look.
CREATE TABLE schedules (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    word         TEXT NOT NULL,
    params       TEXT NOT NULL,
    selector     TEXT NOT NULL,
    every_ms     INTEGER NOT NULL DEFAULT 0 CHECK (every_ms >= 0),
    cron         TEXT NOT NULL DEFAULT '',
    paused       INTEGER NOT NULL DEFAULT 0,
    role         TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    updated_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    next_run_at  INTEGER,
    last_run_at  INTEGER,
    last_queued  INTEGER NOT NULL DEFAULT 0,
    last_skipped INTEGER NOT NULL DEFAULT 0,
    last_failed  INTEGER NOT NULL DEFAULT 0,
    last_message TEXT NOT NULL DEFAULT '',
    CHECK ((every_ms > 0) <> (cron <> ''))
) STRICT;
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;

-- The fleet's default: every node that has packages_report runs it hourly (the others are skipped and
-- counted). Made once, here, so an admin who edits, pauses or deletes it is not overruled at start.
INSERT INTO schedules (id, name, word, params, selector, every_ms, role, created_by, updated_by, created_at, updated_at)
VALUES ('sched_default_packages_report', 'packages-report', 'packages_report', '{}', 'all', 3600000, 'operator', 'plane', 'plane',
        CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));

-- The fleet security view finds each node's newest completed report of a word with one probe.
CREATE INDEX jobs_word_completed ON jobs (node_id, word, id) WHERE state = 'completed';
