-- Queries of drivers, accounts and the driver-call audit log (plane/store/drivers.go, accounts.go,
-- drivercalls.go), read after queries.sql.

-- fragment: driver_columns
name, enabled, digest, changed_at, changed_by, unconfined

-- fragment: account_columns
id, name, driver, settings, key_id, created_at, created_by, test

-- name: DriverUpsert
-- Disabling keeps the digest last enabled and the consent it was enabled with, for the record; enabling
-- again records its own consent.
INSERT INTO drivers (name, enabled, digest, changed_at, changed_by, unconfined) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled,
    digest = CASE WHEN excluded.digest = '' THEN drivers.digest ELSE excluded.digest END,
    unconfined = CASE WHEN excluded.enabled THEN excluded.unconfined ELSE drivers.unconfined END,
    changed_at = excluded.changed_at, changed_by = excluded.changed_by
RETURNING {{driver_columns}}

-- name: DriverGet
SELECT {{driver_columns}} FROM drivers WHERE name = ?1

-- name: DriverList
SELECT {{driver_columns}} FROM drivers ORDER BY name

-- name: AccountInsert
INSERT INTO driver_accounts (id, name, driver, settings, sealed, key_id, created_at, created_by, test)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)

-- name: AccountGet
SELECT {{account_columns}}, sealed FROM driver_accounts WHERE name = ?1

-- name: AccountList
SELECT {{account_columns}} FROM driver_accounts WHERE (?1 = '' OR driver = ?1) ORDER BY name

-- name: AccountDelete
DELETE FROM driver_accounts WHERE name = ?1 RETURNING {{account_columns}}

-- name: AccountSetTest
UPDATE driver_accounts SET test = ?2 WHERE name = ?1 RETURNING {{account_columns}}

-- name: DriverCallFinish
-- Only a pending row takes an outcome, so an outcome is written once.
UPDATE driver_calls SET code = ?2, duration_ms = ?3 WHERE id = ?1 AND code = ?4
RETURNING id, at, actor, account, driver, operation, target, code, duration_ms

-- name: DriverCallInsert
INSERT INTO driver_calls (id, at, actor, account, driver, operation, target, code, duration_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)

-- name: DriverCallList
SELECT id, at, actor, account, driver, operation, target, code, duration_ms FROM driver_calls
WHERE (?1 = '' OR driver = ?1) AND (?2 = '' OR account = ?2) AND (?3 = '' OR id < ?3)
ORDER BY id DESC
LIMIT ?4
