-- Web Push: the browsers that asked to be told (their push service's endpoint and the keys a
-- push is encrypted to), and which notices were sent for which interaction. A notice's row is
-- its compare-and-set: of the servers sharing a database, the one whose insert went in sends it.

CREATE TABLE push_subscriptions (
    endpoint      TEXT PRIMARY KEY NOT NULL,
    -- keys.p256dh and keys.auth of PushSubscription.toJSON(), base64url.
    p256dh        TEXT NOT NULL,
    auth          TEXT NOT NULL,
    user_agent    TEXT,
    created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE notices_sent (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_use_id TEXT NOT NULL,
    -- push_opened, push_parked, push_closed, webhook_opened or webhook_parked.
    kind        TEXT NOT NULL,
    -- sent, or seen (a tab showed it: nothing was sent).
    outcome     TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool_use_id, kind)
) WITHOUT ROWID;
