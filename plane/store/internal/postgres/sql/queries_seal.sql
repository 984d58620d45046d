-- Sealed values for the master key rotation (plane/store/sealed_types.go): paged by row key, and
-- re-sealed only if the row still holds the bytes the rotation read.

-- name: SealedAccountList
SELECT id, name, driver, sealed, key_id FROM driver_accounts WHERE id > $1 ORDER BY id LIMIT $2

-- name: SealedAccountReseal
UPDATE driver_accounts SET sealed = $3, key_id = $4 WHERE id = $1 AND sealed = $2

-- name: SealedTargetList
SELECT name, name, '', sealed, key_id FROM backup_targets WHERE name > $1 ORDER BY name LIMIT $2

-- name: SealedTargetReseal
UPDATE backup_targets SET sealed = $3, key_id = $4 WHERE name = $1 AND sealed = $2

-- name: SealedSessionList
SELECT id_hash, '', '', refresh_sealed, '' FROM sso_sessions WHERE id_hash > $1 ORDER BY id_hash LIMIT $2

-- name: SealedSessionReseal
UPDATE sso_sessions SET refresh_sealed = $3 WHERE id_hash = $1 AND refresh_sealed = $2
