-- Each node's newest completed packages_report, kept beside the jobs so the fleet security view reads
-- one row per node by key instead of probing the jobs index per node: the job, when it finished, the
-- part the view reads (jobs.summary, or the whole output of a report taken in before 0027), and
-- whether that report owes a reboot or has security fixes waiting (the two cases in which the view
-- looks at an older report). Kept by the triggers below in the transaction that completes or deletes
-- the job, whatever statement does it, so it cannot fall out of step with the jobs. A migration that
-- builds jobs again must make these triggers again.
CREATE TABLE package_reports (
    node_id       TEXT PRIMARY KEY REFERENCES nodes (id),
    job_id        TEXT NOT NULL,
    finished_at   INTEGER NOT NULL,
    summary       TEXT,
    reboot_owed   INTEGER NOT NULL,
    fixes_waiting INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- A completed report is taken in unless the node's row already holds a newer one (newest is the
-- highest job id, as everywhere the view reads jobs).
CREATE TRIGGER package_reports_keep AFTER UPDATE OF state ON jobs
WHEN NEW.state = 'completed' AND OLD.state <> 'completed' AND NEW.word = 'packages_report'
BEGIN
    INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
    SELECT NEW.node_id, NEW.id, NEW.finished_at, s,
        CASE WHEN json_valid(s) THEN COALESCE(json_type(s, '$.reboot.owed') = 'true', 0) ELSE 0 END,
        CASE WHEN json_valid(s) AND json_type(s, '$.security_upgrades') = 'array' THEN json_array_length(s, '$.security_upgrades') > 0 ELSE 0 END
    FROM (SELECT COALESCE(NEW.summary, NEW.output) AS s)
    WHERE true
    ON CONFLICT (node_id) DO UPDATE SET job_id = excluded.job_id, finished_at = excluded.finished_at, summary = excluded.summary,
        reboot_owed = excluded.reboot_owed, fixes_waiting = excluded.fixes_waiting
    WHERE package_reports.job_id < excluded.job_id;
END;

-- A deleted report (retention and batch pruning delete jobs) gives its place to the node's newest
-- remaining one, or to nothing when none remains, as reading the jobs would.
CREATE TRIGGER package_reports_drop AFTER DELETE ON jobs
WHEN OLD.state = 'completed' AND OLD.word = 'packages_report'
BEGIN
    DELETE FROM package_reports WHERE node_id = OLD.node_id AND job_id = OLD.id;
    INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
    SELECT node_id, id, finished_at, s,
        CASE WHEN json_valid(s) THEN COALESCE(json_type(s, '$.reboot.owed') = 'true', 0) ELSE 0 END,
        CASE WHEN json_valid(s) AND json_type(s, '$.security_upgrades') = 'array' THEN json_array_length(s, '$.security_upgrades') > 0 ELSE 0 END
    FROM (SELECT node_id, id, finished_at, COALESCE(summary, output) AS s FROM jobs
        WHERE node_id = OLD.node_id AND word = 'packages_report' AND state = 'completed'
            AND NOT EXISTS (SELECT 1 FROM package_reports WHERE node_id = OLD.node_id)
        ORDER BY id DESC LIMIT 1)
    WHERE true
    ON CONFLICT DO NOTHING;
END;

INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
SELECT node_id, id, finished_at, s,
    CASE WHEN json_valid(s) THEN COALESCE(json_type(s, '$.reboot.owed') = 'true', 0) ELSE 0 END,
    CASE WHEN json_valid(s) AND json_type(s, '$.security_upgrades') = 'array' THEN json_array_length(s, '$.security_upgrades') > 0 ELSE 0 END
FROM (SELECT node_id, id, finished_at, COALESCE(summary, output) AS s,
        row_number() OVER (PARTITION BY node_id ORDER BY id DESC) AS k
    FROM jobs WHERE word = 'packages_report' AND state = 'completed')
WHERE k = 1;

-- Whether the node's vocabulary has packages_report (the view's grey "lacks the word"), kept with the
-- vocabulary by the trigger below instead of searched for in each node's vocabulary on every view
-- (about 3 KB of JSON a node, parsed again each time). A migration that builds nodes again must make
-- the trigger again.
ALTER TABLE nodes ADD COLUMN reports_packages INTEGER NOT NULL DEFAULT 0;
UPDATE nodes SET reports_packages = EXISTS (SELECT 1 FROM json_each(vocabulary) WHERE json_extract(value, '$.name') = 'packages_report');
CREATE TRIGGER nodes_reports_packages AFTER UPDATE OF vocabulary ON nodes
WHEN NEW.vocabulary IS NOT OLD.vocabulary
BEGIN
    UPDATE nodes SET reports_packages = EXISTS (SELECT 1 FROM json_each(NEW.vocabulary) WHERE json_extract(value, '$.name') = 'packages_report')
    WHERE id = NEW.id;
END;
