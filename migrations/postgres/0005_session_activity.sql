-- When the person last did something in a session (created it, wrote, answered): the session
-- list's order, which the agent's own events (streaming, parking) do not move.
ALTER TABLE sessions ADD COLUMN active_at timestamptz;
UPDATE sessions SET active_at = updated_at;
ALTER TABLE sessions ALTER COLUMN active_at SET NOT NULL;
ALTER TABLE sessions ALTER COLUMN active_at SET DEFAULT now();
CREATE INDEX sessions_by_activity ON sessions (active_at DESC);
