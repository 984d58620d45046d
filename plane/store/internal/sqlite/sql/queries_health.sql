-- Queries of the plane's own health (plane/store/internal/sqlstore/replica.go, health.go): replica
-- heartbeats with their memory and route counts, and the detectors that read them and the driver calls.

-- fragment: replica_columns
id, version, address, started_at, heartbeat_at, lease_ms, services, heap_bytes, rss_bytes, peak_heap_bytes,
peak_rss_bytes, peak_at, memory_limit_bytes, memory_alert

-- name: ReplicaUpsert
-- The peak is kept across restarts of the same replica id: only a higher sample replaces it.
INSERT INTO replicas (id, version, address, started_at, heartbeat_at, lease_ms, services, heap_bytes, rss_bytes,
                      peak_heap_bytes, peak_rss_bytes, peak_at, memory_limit_bytes, memory_alert)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?8, ?9, ?5, ?10, ?11)
ON CONFLICT (id) DO UPDATE SET version = excluded.version, address = excluded.address,
    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, lease_ms = excluded.lease_ms,
    services = excluded.services, heap_bytes = excluded.heap_bytes, rss_bytes = excluded.rss_bytes,
    peak_heap_bytes = max(replicas.peak_heap_bytes, excluded.heap_bytes),
    peak_rss_bytes = max(replicas.peak_rss_bytes, excluded.rss_bytes),
    peak_at = CASE WHEN excluded.rss_bytes > replicas.peak_rss_bytes OR replicas.peak_at IS NULL
                   THEN excluded.heartbeat_at ELSE replicas.peak_at END,
    memory_limit_bytes = excluded.memory_limit_bytes, memory_alert = excluded.memory_alert
RETURNING {{replica_columns}}

-- name: ReplicaList
SELECT {{replica_columns}} FROM replicas ORDER BY id

-- name: ReplicaGetForUpdate
SELECT {{replica_columns}} FROM replicas WHERE id = ?1

-- name: ReplicaDelete
DELETE FROM replicas WHERE id = ?1

-- name: RouteCountUpsert
INSERT INTO route_counts (replica_id, route, minute, requests, failures, codes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (replica_id, route, minute) DO UPDATE SET requests = excluded.requests, failures = excluded.failures,
    codes = excluded.codes

-- name: RouteCountPrune
DELETE FROM route_counts WHERE replica_id = ?1 AND minute < ?2

-- name: DetectRoutes
SELECT route, requests, failures, codes FROM route_counts WHERE minute >= ?1 ORDER BY route

-- name: DetectDrivers
-- Per enabled driver, over the calls since ?1: restarts, failed calls since its last success, the
-- last failure (a restart or a failed call) and the last success.
SELECT c.driver,
       SUM(CASE WHEN c.operation = ?2 THEN 1 ELSE 0 END),
       SUM(CASE WHEN c.operation <> ?2 AND c.code IN (SELECT value FROM json_each(?3))
                 AND c.at > COALESCE(ok.last_ok, ?1) THEN 1 ELSE 0 END),
       MAX(CASE WHEN c.operation = ?2 OR c.code IN (SELECT value FROM json_each(?3)) THEN c.at END),
       MAX(ok.last_ok)
FROM driver_calls c
JOIN drivers d ON d.name = c.driver AND d.enabled
LEFT JOIN (SELECT driver, max(at) AS last_ok FROM driver_calls WHERE at > ?1 AND code = ?4 GROUP BY driver) ok
    ON ok.driver = c.driver
WHERE c.at > ?1
GROUP BY c.driver
ORDER BY c.driver
