-- Files attached to messages (issue 21): stored once, by the SHA-256 of their bytes; a message's
-- blocks refer to them by that hash. Not deleted with a session: another may refer to the same file.
CREATE TABLE attachments (
    hash TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    name TEXT,
    size INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    created_at_ms INTEGER NOT NULL
);
