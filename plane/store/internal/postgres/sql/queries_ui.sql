-- name: NodeCount
-- $1: the silent cutoff. needs_newer_agent in a node's update report is the floor it is below.
SELECT COUNT(*),
    COUNT(*) FILTER (WHERE state = 'active'),
    COUNT(*) FILTER (WHERE state = 'disconnected'),
    COUNT(*) FILTER (WHERE state = 'left'),
    COUNT(*) FILTER (WHERE state = 'active' AND (last_seen_at IS NULL OR last_seen_at < $1)),
    COUNT(*) FILTER (WHERE state = 'active' AND untrusted <> ''),
    COUNT(*) FILTER (WHERE state = 'active' AND COALESCE(update_report ->> 'needs_newer_agent', '') <> '')
FROM nodes

-- name: NodeCountVersions
SELECT agent_version, COUNT(*) FROM nodes WHERE state = 'active'
GROUP BY agent_version ORDER BY agent_version

-- name: NodeListFiltered
-- NodeList narrowed: $4/$5 a label's key and value, $6 a word's name, $7 an agent version ('' for any).
SELECT {{node_columns}} FROM nodes
WHERE ($1 = '' OR state = $1) AND ($2 = '' OR id > $2)
  AND ($4 = '' OR labels ->> $4::text = $5)
  AND ($6 = '' OR vocabulary @> jsonb_build_array(jsonb_build_object('name', $6::text)))
  AND ($7 = '' OR agent_version = $7)
ORDER BY id
LIMIT $3

-- name: UISessionInsert
INSERT INTO ui_sessions (id_hash, token_id, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)

-- name: UISessionSweep
DELETE FROM ui_sessions WHERE expires_at <= $1

-- name: UISessionGet
SELECT s.csrf, s.created_at, s.expires_at, t.id, t.name, t.role, t.created_at, t.revoked_at
FROM ui_sessions s JOIN tokens t ON t.id = s.token_id
WHERE s.id_hash = $1 AND s.expires_at > $2

-- name: UISessionDelete
DELETE FROM ui_sessions WHERE id_hash = $1

-- name: SSOSessionInsert
INSERT INTO sso_sessions (id_hash, subject, name, role, csrf, refresh_sealed, refresh_at, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: SSOSessionSweep
DELETE FROM sso_sessions WHERE expires_at <= $1

-- name: SSOSessionGet
SELECT subject, name, role, csrf, refresh_sealed, refresh_at, created_at, expires_at
FROM sso_sessions WHERE id_hash = $1 AND expires_at > $2

-- name: SSOSessionRefresh
UPDATE sso_sessions SET name = $2, role = $3, refresh_sealed = $4, refresh_at = $5 WHERE id_hash = $1 AND expires_at > $6

-- name: SSOSessionDelete
DELETE FROM sso_sessions WHERE id_hash = $1
