-- Sessions, their messages (the thread as folded from the event log) and the log itself.
-- A message row and the event that changed it are written in one transaction.
-- The same schema as migrations/sqlite, in Postgres's types: jsonb, timestamptz, bigint, boolean.

CREATE TABLE sessions (
    id            text PRIMARY KEY,
    title         text NOT NULL,
    -- The title follows the first message until the person renames the session.
    title_is_auto boolean NOT NULL DEFAULT TRUE,
    agent         text NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    last_seq      bigint NOT NULL DEFAULT 0,
    -- thread::TurnState.
    turn          jsonb NOT NULL DEFAULT '{"working":false,"last_outcome":null,"last_usage":null}'
);

CREATE INDEX sessions_by_recency ON sessions (updated_at DESC);

CREATE TABLE messages (
    session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position    bigint NOT NULL,
    id          text NOT NULL,
    role        text NOT NULL,
    -- An array of thread::Block.
    blocks      jsonb NOT NULL,
    streaming   boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_seq bigint NOT NULL,
    PRIMARY KEY (session_id, position)
);

CREATE TABLE events (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    at         timestamptz NOT NULL,
    kind       text NOT NULL,
    -- thread::EventBody.
    body       jsonb NOT NULL,
    PRIMARY KEY (session_id, seq)
);
