-- Restores queued from the plane are recorded beside backups and verifies: the record names the run
-- and the chain the read grant covers when the node claims the job, and holds the node's verdict.
ALTER TABLE backup_jobs DROP CONSTRAINT backup_jobs_purpose_check;
ALTER TABLE backup_jobs ADD CONSTRAINT backup_jobs_purpose_check CHECK (purpose IN ('backup', 'verify', 'restore'));
