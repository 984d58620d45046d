-- Patching the fleet: a rollout's purpose (patch: its steps are judged by what the package words
-- report), and each step's machine, so that nodes on one machine are never changed at once.
ALTER TABLE rollouts ADD COLUMN purpose text NOT NULL DEFAULT '';
ALTER TABLE rollout_steps ADD COLUMN machine text NOT NULL DEFAULT '';
