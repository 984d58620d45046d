-- An admin's consent to run a driver where no protection of the plane's files can be applied, kept with
-- the enabled driver so that every replica and every restart honours it.
ALTER TABLE drivers ADD COLUMN unconfined INTEGER NOT NULL DEFAULT 0 CHECK (unconfined IN (0, 1));
