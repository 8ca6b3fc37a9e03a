-- A turn's usage in a row of its own, not on its last reply's row, as on SQLite (where writing it
-- on the reply's row wrote the whole reply again): one schema for both stores.
CREATE TABLE message_usage (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position   bigint NOT NULL,
    usage      jsonb NOT NULL,
    PRIMARY KEY (session_id, position)
);

INSERT INTO message_usage (session_id, position, usage)
SELECT session_id, position, usage FROM messages WHERE usage IS NOT NULL;

ALTER TABLE messages DROP COLUMN usage;
