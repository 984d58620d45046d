-- Placeholder: migrations 0006 and 0007 belong to branches merged beside this one (numbers are renumbered
-- at merge); this file only keeps the numbering without gaps on this branch. Drop it at merge.
SELECT 1;
