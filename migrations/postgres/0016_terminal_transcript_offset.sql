-- How far the server has read a terminal session's transcript: the prompts and the agent's words
-- before it are in the session's log. Advanced with a compare-and-set, so that two servers (or a
-- hook and the sweep) never add the same lines twice.
ALTER TABLE terminal_sessions ADD COLUMN transcript_offset bigint NOT NULL DEFAULT 0;
