-- The sessions whose agent works, found without reading every session's turn: the session list
-- of every tab holds them beside its first page (`Store::list_for_tabs`), and with thousands of
-- sessions that read was most of the time `/` took to answer.
CREATE INDEX sessions_working ON sessions (id) WHERE json_extract(turn, '$.working') = 1;
