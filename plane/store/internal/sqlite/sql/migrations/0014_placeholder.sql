-- Placeholder: migration 0014 belongs to another change. Delete this file when that change is merged.
SELECT 1;
