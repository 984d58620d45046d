-- The machine inventory: machines written down by hand, and the nodes' newest reports.

-- fragment: machine_columns
id, name, purpose, owner, os_release, retire_by, confirmed_at, confirmed_by, created_at, created_by

-- name: MachineInsert
INSERT INTO machines (id, name, purpose, owner, os_release, retire_by, confirmed_at, confirmed_by, created_at, created_by)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7, ?8)
RETURNING {{machine_columns}}

-- name: MachineUpdate
UPDATE machines SET name = ?2, purpose = ?3, owner = ?4, os_release = ?5, retire_by = ?6,
    confirmed_at = ?7, confirmed_by = ?8
WHERE id = ?1
RETURNING {{machine_columns}}

-- name: MachineConfirm
UPDATE machines SET confirmed_at = ?2, confirmed_by = ?3 WHERE id = ?1 RETURNING {{machine_columns}}

-- name: MachineGet
SELECT {{machine_columns}} FROM machines WHERE id = ?1

-- name: MachineList
SELECT {{machine_columns}} FROM machines ORDER BY name

-- name: MachineDelete
DELETE FROM machines WHERE id = ?1

-- name: JobNewestOutputs
-- The newest completed job of word ?1 or ?2 on each node, with its output.
SELECT j.node_id, j.word, j.finished_at, j.output FROM jobs j
WHERE j.state = 'completed' AND j.word IN (?1, ?2)
    AND j.finished_at = (SELECT MAX(k.finished_at) FROM jobs k
        WHERE k.node_id = j.node_id AND k.word = j.word AND k.state = 'completed')
ORDER BY j.node_id, j.word
