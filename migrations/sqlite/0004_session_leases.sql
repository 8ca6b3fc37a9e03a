-- Which server runs a session's turns, until when (milliseconds since the epoch, by SQLite's
-- clock). Taken and renewed with a compare-and-set; an expired lease is anyone's to take.

CREATE TABLE session_leases (
    session_id    TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    server_id     TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX session_leases_by_server ON session_leases (server_id);
