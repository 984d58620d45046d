-- Roles: named declarations of what machines carry, each edit a new version kept for history. A
-- version's spec is the role's rendered footprint as JSON; the content of its files lives in artifacts,
-- and role_version_artifacts names every digest a version references, so no content a kept version
-- names can be deleted (the foreign key refuses it). Assignments carry a role to the nodes a selector
-- picks, now and later.
CREATE TABLE roles (
    name       TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE role_versions (
    role       TEXT NOT NULL REFERENCES roles (name),
    version    INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    PRIMARY KEY (role, version)
) STRICT;
CREATE TABLE role_version_artifacts (
    role    TEXT NOT NULL,
    version INTEGER NOT NULL,
    digest  TEXT NOT NULL REFERENCES artifacts (digest),
    PRIMARY KEY (role, version, digest),
    FOREIGN KEY (role, version) REFERENCES role_versions (role, version)
) STRICT;
CREATE INDEX role_version_artifacts_digest ON role_version_artifacts (digest);
CREATE TABLE role_assignments (
    role       TEXT NOT NULL REFERENCES roles (name),
    selector   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    PRIMARY KEY (role, selector)
) STRICT;
-- A rollout may give each node its own params for the change (a roles apply sends each node its
-- footprint). Kept apart from rollout_steps, which the engine reads whole on every pass.
CREATE TABLE rollout_step_params (
    rollout_id TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    params     TEXT NOT NULL,
    PRIMARY KEY (rollout_id, node_id),
    FOREIGN KEY (rollout_id, node_id) REFERENCES rollout_steps (rollout_id, node_id)
) STRICT;
