-- Placeholder for the 0006 migration another branch adds at the same time (renumbered at merge):
-- loadMigrations refuses a gap, so this branch's 0007 needs a 0006 to run. Delete it at merge.
SELECT 1;
