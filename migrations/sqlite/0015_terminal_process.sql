-- The `claude` a terminal session runs in, as its hook found it (JSON: pid, start_ticks, boot_id):
-- a server on the same machine and boot ends the session once that process has exited without
-- a word (its tmux killed, SIGKILL), which no hook reports.
ALTER TABLE terminal_sessions ADD COLUMN process TEXT;
