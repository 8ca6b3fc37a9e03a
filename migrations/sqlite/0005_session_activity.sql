-- When the person last did something in a session (created it, wrote, answered): the session
-- list's order, which the agent's own events (streaming, parking) do not move.
ALTER TABLE sessions ADD COLUMN active_at_ms INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET active_at_ms = updated_at_ms;
CREATE INDEX sessions_by_activity ON sessions (active_at_ms DESC);
