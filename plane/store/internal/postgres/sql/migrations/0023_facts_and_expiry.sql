-- Each node's host facts as its last full report said them (registry/channel.HostFacts: OS, kernel,
-- CPU, memory, disk, boot time, addresses, when the agent read them); '{}' for an agent that reports
-- none. The top-level keys are the fact keys a filter names (fact.os=debian-12).
ALTER TABLE nodes ADD COLUMN facts jsonb NOT NULL DEFAULT '{}';

-- When each release's signed statement expires (NULL for releases published before this column): the
-- plane:release_expiring detector warns before the release the fleet is served expires.
ALTER TABLE releases ADD COLUMN expires_at timestamptz;
