-- Each node's newest completed packages_report, kept beside the jobs so the fleet security view reads
-- one row per node by key instead of probing the jobs index per node: the job, when it finished, the
-- part the view reads (jobs.summary, or the whole output of a report taken in before 0027) as text,
-- and whether that report owes a reboot or has security fixes waiting (the two cases in which the view
-- looks at an older report). Kept by the triggers below in the transaction that completes or deletes
-- the job, whatever statement does it, so it cannot fall out of step with the jobs.
CREATE TABLE package_reports (
    node_id       text PRIMARY KEY REFERENCES nodes (id),
    job_id        text NOT NULL,
    finished_at   timestamptz NOT NULL,
    summary       text,
    reboot_owed   boolean NOT NULL,
    fixes_waiting boolean NOT NULL
);

-- package_reports_keep takes a completed report in, unless the node's row already holds a newer one
-- (newest is the highest job id, as everywhere the view reads jobs).
CREATE FUNCTION package_reports_keep() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s json := COALESCE(NEW.summary::json, NEW.output);
BEGIN
    INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
    VALUES (NEW.node_id, NEW.id, NEW.finished_at, s::text,
        COALESCE(s -> 'reboot' ->> 'owed' = 'true', false),
        CASE WHEN json_typeof(s -> 'security_upgrades') = 'array' THEN json_array_length(s -> 'security_upgrades') > 0 ELSE false END)
    ON CONFLICT (node_id) DO UPDATE SET job_id = excluded.job_id, finished_at = excluded.finished_at, summary = excluded.summary,
        reboot_owed = excluded.reboot_owed, fixes_waiting = excluded.fixes_waiting
    WHERE package_reports.job_id < excluded.job_id;
    RETURN NULL;
END $$;

-- package_reports_drop puts the node's newest remaining report in the place of a deleted one (retention
-- and batch pruning delete jobs), or nothing when none remains, as reading the jobs would.
CREATE FUNCTION package_reports_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM package_reports WHERE node_id = OLD.node_id AND job_id = OLD.id;
    IF FOUND THEN
        INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
        SELECT j.node_id, j.id, j.finished_at, s::text,
            COALESCE(s -> 'reboot' ->> 'owed' = 'true', false),
            CASE WHEN json_typeof(s -> 'security_upgrades') = 'array' THEN json_array_length(s -> 'security_upgrades') > 0 ELSE false END
        FROM jobs j, LATERAL (SELECT COALESCE(j.summary::json, j.output) AS s) x
        WHERE j.node_id = OLD.node_id AND j.word = 'packages_report' AND j.state = 'completed'
        ORDER BY j.id DESC LIMIT 1;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER package_reports_keep AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (NEW.state = 'completed' AND OLD.state <> 'completed' AND NEW.word = 'packages_report')
    EXECUTE FUNCTION package_reports_keep();
CREATE TRIGGER package_reports_drop AFTER DELETE ON jobs FOR EACH ROW
    WHEN (OLD.state = 'completed' AND OLD.word = 'packages_report')
    EXECUTE FUNCTION package_reports_drop();

INSERT INTO package_reports (node_id, job_id, finished_at, summary, reboot_owed, fixes_waiting)
SELECT DISTINCT ON (j.node_id) j.node_id, j.id, j.finished_at, s::text,
    COALESCE(s -> 'reboot' ->> 'owed' = 'true', false),
    CASE WHEN json_typeof(s -> 'security_upgrades') = 'array' THEN json_array_length(s -> 'security_upgrades') > 0 ELSE false END
FROM jobs j, LATERAL (SELECT COALESCE(j.summary::json, j.output) AS s) x
WHERE j.word = 'packages_report' AND j.state = 'completed'
ORDER BY j.node_id, j.id DESC;

-- Whether the node's vocabulary has packages_report (the view's grey "lacks the word"), kept with the
-- vocabulary instead of searched for in each node's vocabulary on every view (about 3 KB of jsonb a
-- node, TOASTed, so decompressed each time).
ALTER TABLE nodes ADD COLUMN reports_packages boolean NOT NULL
    GENERATED ALWAYS AS (vocabulary @> '[{"name": "packages_report"}]'::jsonb) STORED;
