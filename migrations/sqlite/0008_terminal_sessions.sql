-- Sessions AskBridge does not run: a `claude` started in a terminal, which reaches AskBridge
-- through its hooks (`askbridge hook`). The session row says who runs it (agent 'terminal');
-- this one says where: the host, the folder, Claude Code's own session id and transcript, and
-- what the terminal is doing as its hooks last said ('working', 'waiting', 'idle', 'ended').
CREATE TABLE terminal_sessions (
    session_id        TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    host              TEXT NOT NULL,
    claude_session_id TEXT NOT NULL,
    folder            TEXT NOT NULL,
    transcript_path   TEXT,
    state             TEXT NOT NULL DEFAULT 'idle',
    state_at_ms       INTEGER NOT NULL
) WITHOUT ROWID;

-- One AskBridge session per Claude Code session on a host.
CREATE UNIQUE INDEX terminal_sessions_by_claude ON terminal_sessions (host, claude_session_id);
