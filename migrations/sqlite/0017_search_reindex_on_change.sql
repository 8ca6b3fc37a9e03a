-- A message's search entry is made again only when its text changed. The upsert of a message sets
-- `blocks` at every event that touches the message (its usage at the turn's end, a result), and
-- the trigger of 0009 then deleted and inserted the same entry: eight 4 KiB pages of the WAL at a
-- turn's end for a 14 KB reply (strace, BENCHMARKS.md, "The disk at a reading pace").
DROP TRIGGER message_search_update;

CREATE TRIGGER message_search_update AFTER UPDATE OF blocks ON messages
WHEN old.blocks IS NOT new.blocks BEGIN
    DELETE FROM message_search
     WHERE rowid = (SELECT s.rowid * 1048576 + new.position FROM sessions AS s WHERE s.id = new.session_id);
    INSERT INTO message_search (rowid, text)
    SELECT s.rowid * 1048576 + new.position,
           (SELECT coalesce(group_concat(t.value, ' '), '') FROM json_tree(new.blocks) AS t
             WHERE t.type = 'text'
               AND t.key IN ('text', 'result', 'command', 'description', 'question', 'label', 'other', 'notes', 'plan'))
      FROM sessions AS s WHERE s.id = new.session_id;
END;
