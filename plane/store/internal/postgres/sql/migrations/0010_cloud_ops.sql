-- Cloud operations on the plane: an account may be marked test, so that automation (rollouts,
-- provisioning cleanup) may make destructive calls on its instances without their tag. Driver calls are
-- recorded before they are made, with code 'pending' until their outcome is written; no column is needed
-- for that.
ALTER TABLE driver_accounts ADD COLUMN test boolean NOT NULL DEFAULT false;
