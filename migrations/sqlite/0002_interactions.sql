-- Questions (and later approvals) the agent put to the person, from when they appear to how
-- they ended. Written with the event that changed them, in one transaction.

CREATE TABLE interactions (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_use_id TEXT NOT NULL,
    -- JSON of question::InteractionRequest.
    request     TEXT NOT NULL,
    -- pending, answered, declined, expired, cancelled or failed.
    state       TEXT NOT NULL,
    -- JSON of question::InteractionOutcome, once it ended.
    outcome     TEXT,
    updated_seq INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
) WITHOUT ROWID;

CREATE INDEX interactions_pending ON interactions (session_id) WHERE state = 'pending';
