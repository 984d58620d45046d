-- Cases the agents report, incidents with their timelines, and the webhook notifications they send.
-- Text a node sent (case summaries, notes, the reason it distrusts the plane) is stored as given,
-- after the plane has capped it; it is shown as text and never interpreted.

-- Why the node could not verify the plane's statement, as its last claim said ('' when it could).
ALTER TABLE nodes ADD COLUMN untrusted text NOT NULL DEFAULT '';

-- A case is one escalation of one recipe on one node, numbered by the node.
CREATE TABLE cases (
    node_id     text NOT NULL REFERENCES nodes (id),
    case_id     bigint NOT NULL CHECK (case_id > 0),
    recipe      text NOT NULL,
    state       text NOT NULL CHECK (state IN ('open', 'closed')),
    opened_at   timestamptz NOT NULL,
    closed_at   timestamptz,
    closed_by   text NOT NULL DEFAULT '' CHECK (closed_by IN ('', 'node', 'plane')),
    summary     text NOT NULL,
    body        json,
    received_at timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (node_id, case_id)
);
-- One open case per recipe per node, held by the schema as well as by intake's rules.
CREATE UNIQUE INDEX cases_one_open ON cases (node_id, recipe) WHERE state = 'open';
CREATE INDEX cases_recipe ON cases (node_id, recipe, case_id);

CREATE TABLE case_notes (
    node_id     text NOT NULL,
    case_id     bigint NOT NULL,
    author      text NOT NULL CHECK (author IN ('node', 'plane')),
    seq         bigint NOT NULL CHECK (seq > 0),
    at          timestamptz NOT NULL,
    text        text NOT NULL,
    received_at timestamptz NOT NULL,
    PRIMARY KEY (node_id, case_id, author, seq),
    FOREIGN KEY (node_id, case_id) REFERENCES cases (node_id, case_id)
);

-- An incident is one condition (source) on one node: whether it still happens (condition) and what a
-- person decided (triage) are separate columns.
CREATE TABLE incidents (
    id            text PRIMARY KEY,
    node_id       text NOT NULL REFERENCES nodes (id),
    source        text NOT NULL,
    severity      text NOT NULL CHECK (severity IN ('critical', 'warning')),
    condition     text NOT NULL CHECK (condition IN ('open', 'cleared')),
    triage        text NOT NULL CHECK (triage IN ('new', 'snoozed', 'resolved', 'ignored')),
    snoozed_until timestamptz,
    summary       text NOT NULL,
    case_id       bigint NOT NULL DEFAULT 0,
    opened_at     timestamptz NOT NULL,
    changed_at    timestamptz NOT NULL,
    cleared_at    timestamptz,
    triaged_at    timestamptz,
    triaged_by    text NOT NULL DEFAULT '',
    reason        text NOT NULL DEFAULT '',
    events        integer NOT NULL DEFAULT 0,
    CHECK ((triage = 'snoozed') = (snoozed_until IS NOT NULL))
);
-- One open incident per condition per node: every replica's reconciler may try to open it.
CREATE UNIQUE INDEX incidents_one_open ON incidents (node_id, source) WHERE condition = 'open';
CREATE INDEX incidents_condition ON incidents (node_id, source, id);
CREATE INDEX incidents_open_source ON incidents (source) WHERE condition = 'open';
CREATE INDEX incidents_needs_you ON incidents (id) WHERE triage IN ('new', 'snoozed');

CREATE TABLE incident_events (
    incident_id   text NOT NULL REFERENCES incidents (id),
    seq           integer NOT NULL CHECK (seq > 0),
    at            timestamptz NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('opened', 'cleared', 'reopened', 'triage', 'note')),
    actor         text NOT NULL,
    triage        text NOT NULL DEFAULT '',
    snoozed_until timestamptz,
    text          text NOT NULL DEFAULT '',
    PRIMARY KEY (incident_id, seq)
);

-- One notification per webhook per opened or reopened event, written in the transaction that wrote the
-- event (an outbox): a replica delivers it under a lease, so no two replicas send it at once.
CREATE TABLE notifications (
    id           text PRIMARY KEY,
    incident_id  text NOT NULL REFERENCES incidents (id),
    event_seq    integer NOT NULL,
    webhook      text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('opened', 'reopened')),
    state        text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL,
    lease_until  timestamptz,
    lease_holder text NOT NULL DEFAULT '',
    last_error   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    UNIQUE (incident_id, event_seq, webhook)
);
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';

-- Every delivery attempt, written before it is made and completed after.
CREATE TABLE notification_attempts (
    notification_id text NOT NULL REFERENCES notifications (id),
    attempt         integer NOT NULL CHECK (attempt > 0),
    at              timestamptz NOT NULL,
    holder          text NOT NULL,
    status          integer NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    duration_ms     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (notification_id, attempt)
);

-- The detectors count refused and lost jobs of the last hour.
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN ('refused', 'lost');
