-- Each word's reach on the node as its last full report said it (registry/channel.WordReach: the
-- capabilities its signed manifest declares, as the node's policy narrows them); '[]' for an agent that
-- reports none. Not among the node's columns: only the word and node pages read it.
ALTER TABLE nodes ADD COLUMN reach TEXT NOT NULL DEFAULT '[]';
