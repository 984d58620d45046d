-- The digest of the report a node last sent in full: a claim naming the same digest changed nothing the
-- plane keeps, so the report is not written again.
ALTER TABLE nodes ADD COLUMN report_digest TEXT NOT NULL DEFAULT '';
