-- Web Push: the browsers that asked to be told (their push service's endpoint and the keys a
-- push is encrypted to), and which notices were sent for which interaction. A notice's row is
-- its compare-and-set: of the servers sharing a database, the one whose insert went in sends it.

CREATE TABLE push_subscriptions (
    endpoint   text PRIMARY KEY,
    -- keys.p256dh and keys.auth of PushSubscription.toJSON(), base64url.
    p256dh     text NOT NULL,
    auth       text NOT NULL,
    user_agent text,
    created_at timestamptz NOT NULL
);

CREATE TABLE notices_sent (
    session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_use_id text NOT NULL,
    -- push_opened, push_parked, push_closed, webhook_opened or webhook_parked.
    kind        text NOT NULL,
    -- sent, or seen (a tab showed it: nothing was sent).
    outcome     text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, tool_use_id, kind)
);
