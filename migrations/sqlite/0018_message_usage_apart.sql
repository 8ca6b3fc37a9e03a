-- A turn's usage in a row of its own, not on its last reply's row: SQLite writes a row whole, its
-- overflow pages too, whenever the row's size changes, so the usage added at the turn's end wrote
-- every reply a second time (2 bytes to the disk per byte of text, BENCHMARKS.md, "What a turn
-- costs, and what a byte costs").
CREATE TABLE message_usage (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    -- JSON of thread::Usage.
    usage      TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID;

INSERT INTO message_usage (session_id, position, usage)
SELECT session_id, position, usage FROM messages WHERE usage IS NOT NULL;

ALTER TABLE messages DROP COLUMN usage;
