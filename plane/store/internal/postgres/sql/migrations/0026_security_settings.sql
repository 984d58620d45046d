-- The fleet security view's settings an admin set at run time (one row, absent until set): the
-- critical package name patterns as a JSON array. Absent: serve's --critical-packages is in force.
CREATE TABLE security_settings (
    id         integer PRIMARY KEY CHECK (id = 1),
    critical   jsonb NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL
);
