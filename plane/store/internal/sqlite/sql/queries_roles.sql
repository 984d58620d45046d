-- Roles: named, versioned declarations of what machines carry, and their assignments by selector.

-- name: RoleInsert
INSERT INTO roles (name, version, created_at) VALUES (?1, 1, ?2)

-- name: RoleVersionForUpdate
SELECT version FROM roles WHERE name = ?1

-- name: RoleSetVersion
UPDATE roles SET version = ?2 WHERE name = ?1

-- name: RoleVersionInsert
INSERT INTO role_versions (role, version, spec, created_at, created_by) VALUES (?1, ?2, ?3, ?4, ?5)

-- name: RoleVersionArtifactInsert
INSERT INTO role_version_artifacts (role, version, digest) VALUES (?1, ?2, ?3)
ON CONFLICT DO NOTHING

-- name: RoleGet
-- $2: the version, or 0 for the newest.
SELECT v.role, v.version, v.spec, v.created_at, v.created_by FROM role_versions v JOIN roles r ON r.name = v.role
WHERE v.role = ?1 AND v.version = CASE WHEN ?2 = 0 THEN r.version ELSE ?2 END

-- name: RoleList
SELECT v.role, v.version, v.spec, v.created_at, v.created_by FROM role_versions v JOIN roles r ON r.name = v.role AND r.version = v.version
ORDER BY v.role

-- name: RoleHistory
SELECT v.role, v.version, v.spec, v.created_at, v.created_by FROM role_versions v WHERE v.role = ?1
ORDER BY v.version DESC

-- name: RoleExists
SELECT EXISTS (SELECT 1 FROM roles WHERE name = ?1)

-- name: RoleAssignInsert
INSERT INTO role_assignments (role, selector, created_at, created_by) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (role, selector) DO NOTHING

-- name: RoleAssignmentGet
SELECT role, selector, created_at, created_by FROM role_assignments WHERE role = ?1 AND selector = ?2

-- name: RoleAssignmentDelete
DELETE FROM role_assignments WHERE role = ?1 AND selector = ?2

-- name: RoleAssignmentList
SELECT role, selector, created_at, created_by FROM role_assignments WHERE (?1 = '' OR role = ?1)
ORDER BY role, selector

-- name: ArtifactReleased
SELECT EXISTS (SELECT 1 FROM release_artifacts WHERE digest = ?1)

-- name: RolloutStepParamsInsert
INSERT INTO rollout_step_params (rollout_id, node_id, params) VALUES (?1, ?2, ?3)

-- name: RolloutStepParamsGet
SELECT params FROM rollout_step_params WHERE rollout_id = ?1 AND node_id = ?2
