-- Files attached to messages (issue 21): stored once, by the SHA-256 of their bytes; a message's
-- blocks refer to them by that hash. Not deleted with a session: another may refer to the same file.
CREATE TABLE attachments (
    hash       text PRIMARY KEY,
    media_type text NOT NULL,
    name       text,
    size       bigint NOT NULL,
    bytes      bytea NOT NULL,
    created_at timestamptz NOT NULL
);
