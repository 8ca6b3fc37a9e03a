-- Which server runs a session's turns, until when (by the database's clock, shared by every
-- server). Taken and renewed with a compare-and-set; an expired lease is anyone's to take.

CREATE TABLE session_leases (
    session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    server_id  text NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX session_leases_by_server ON session_leases (server_id);
