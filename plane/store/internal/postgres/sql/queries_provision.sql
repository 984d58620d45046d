-- Queries of provisionings (plane/store/provision_types.go), read after queries.sql.

-- fragment: provisioning_columns
id, name, account, region, type, image, platform, labels, dns_account, dns_zone, tag, state, state_at, instance_id,
addresses, token_expires_at, token_used_at, join_id, node_id, reason, cleanup, cleanup_at, created_by,
created_at, updated_at, finished_at, transfer_used, transfer_allowance, transfer_at

-- name: ProvisioningInsert
INSERT INTO provisionings (id, name, account, region, type, image, platform, labels, dns_account, dns_zone, tag, state,
    state_at, created_by, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $13, $7, $8, $9, $10, 'creating', $11, $12, $11, $11)

-- name: ProvisioningLiveName
SELECT id FROM provisionings WHERE name = $1 AND state IN ('creating', 'booting', 'installing', 'joining')

-- name: ProvisioningGet
SELECT {{provisioning_columns}} FROM provisionings WHERE id = $1

-- name: ProvisioningByToken
SELECT {{provisioning_columns}}, token_hash FROM provisionings WHERE token_hash = $1

-- name: ProvisioningList
-- $1: only the open ones (live, or failed with an instance not yet deleted).
SELECT {{provisioning_columns}} FROM provisionings
WHERE (NOT $1::boolean OR state IN ('creating', 'booting', 'installing', 'joining')
    OR (state = 'failed' AND cleanup <> 'deleted' AND (instance_id <> '' OR cleanup = 'failed')))
    AND ($3::text = '' OR state = $3::text)
ORDER BY id DESC LIMIT $2

-- name: ProvisioningSet
-- Moves only from the state (and the update) the caller read: a replica that lost the race moves nothing.
UPDATE provisionings SET state = $3, state_at = $4, instance_id = $5, addresses = $6, token_hash = $7,
    token_expires_at = $8, token_used_at = $9, join_id = $10, node_id = $11, reason = $12, cleanup = $13,
    cleanup_at = $14, updated_at = $15, finished_at = $16
WHERE id = $1 AND state = $2 AND updated_at = $17
RETURNING {{provisioning_columns}}

-- name: ProvisioningEventInsert
INSERT INTO provisioning_events (provisioning_id, at, actor, state, detail) VALUES ($1, $2, $3, $4, $5)

-- name: ProvisioningEvents
SELECT at, actor, state, detail FROM provisioning_events WHERE provisioning_id = $1 ORDER BY at, seq

-- name: ProvisioningAdoptInsert
INSERT INTO provisionings (id, name, account, region, type, image, tag, state, state_at, instance_id, addresses,
    node_id, created_by, created_at, updated_at, finished_at)
VALUES ($1, $2, $3, '', '', '', '', 'joined', $4, $5, $6, $7, $8, $4, $4, $4)

-- name: JoinSetHold
UPDATE joins SET provisioning_id = $2, hold_reason = $3 WHERE id = $1 AND status = 'pending'

-- name: DetectProvisioningOrphans
SELECT id, name, account, instance_id, reason FROM provisionings WHERE state = 'failed' AND cleanup = 'failed'
ORDER BY id

-- name: ProvisioningTokenHash
SELECT token_hash FROM provisionings WHERE id = $1

-- name: ProvisioningTransferSet
UPDATE provisionings SET transfer_used = $2, transfer_allowance = $3, transfer_at = $4
WHERE id = $1 AND state = 'joined' AND instance_id <> ''
RETURNING {{provisioning_columns}}

-- name: DetectMachineTransfer
SELECT id, name, instance_id, transfer_used, transfer_allowance FROM provisionings
WHERE state = 'joined' AND transfer_allowance > 0 AND transfer_used * 5 >= transfer_allowance * 4
ORDER BY id
