-- Sessions AskBridge does not run: a `claude` started in a terminal, which reaches AskBridge
-- through its hooks (`askbridge hook`). The session row says who runs it (agent 'terminal');
-- this one says where: the host, the folder, Claude Code's own session id and transcript, and
-- what the terminal is doing as its hooks last said ('working', 'waiting', 'idle', 'ended').
CREATE TABLE terminal_sessions (
    session_id        text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    host              text NOT NULL,
    claude_session_id text NOT NULL,
    folder            text NOT NULL,
    transcript_path   text,
    state             text NOT NULL DEFAULT 'idle',
    state_at          timestamptz NOT NULL DEFAULT now()
);

-- One AskBridge session per Claude Code session on a host.
CREATE UNIQUE INDEX terminal_sessions_by_claude ON terminal_sessions (host, claude_session_id);
