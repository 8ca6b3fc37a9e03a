-- Keys every server of a team must share, first written wins: the push (VAPID) key, whose public
-- half each browser subscribed with, so that whichever server sends a push signs it with that key.
CREATE TABLE server_keys (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
