-- Questions (and later approvals) the agent put to the person, from when they appear to how
-- they ended. Written with the event that changed them, in one transaction.

CREATE TABLE interactions (
    session_id  text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_use_id text NOT NULL,
    -- question::InteractionRequest.
    request     jsonb NOT NULL,
    -- pending, answered, declined, expired, cancelled or failed.
    state       text NOT NULL,
    -- question::InteractionOutcome, once it ended.
    outcome     jsonb,
    updated_seq bigint NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
);

CREATE INDEX interactions_pending ON interactions (session_id) WHERE state = 'pending';
