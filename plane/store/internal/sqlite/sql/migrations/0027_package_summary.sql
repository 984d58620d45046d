-- What the fleet security view reads of a packages_report result, cut from its output when the result is
-- taken in (JobFinish): whether the package manager is known, the security fixes waiting, half-done
-- packages, services on replaced code, whether a reboot is owed, the OS's name. The view of 10,000
-- nodes reads these instead of every whole output (lists of other upgrades, held packages, processes).
-- NULL for other words, and for reports taken in before this column: the view reads their output.
ALTER TABLE jobs ADD COLUMN summary TEXT;
