-- Sessions, their messages (the thread as folded from the event log) and the log itself.
-- A message row and the event that changed it are written in one transaction.

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY NOT NULL,
    title         TEXT NOT NULL,
    -- The title follows the first message until the person renames the session.
    title_is_auto INTEGER NOT NULL DEFAULT 1,
    agent         TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    last_seq      INTEGER NOT NULL DEFAULT 0,
    -- JSON of thread::TurnState.
    turn          TEXT NOT NULL DEFAULT '{"working":false,"last_outcome":null,"last_usage":null}'
);

CREATE INDEX sessions_by_recency ON sessions (updated_at_ms DESC);

CREATE TABLE messages (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    id            TEXT NOT NULL,
    role          TEXT NOT NULL,
    -- JSON array of thread::Block.
    blocks        TEXT NOT NULL,
    streaming     INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_seq   INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    -- JSON of thread::EventBody.
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
