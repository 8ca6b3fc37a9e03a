-- Searching sessions by what was written in them: a full-text index (FTS5) over the text of each
-- message (what people and agents wrote, commands, results, questions and answers; not ids,
-- states or image data), kept by triggers. Contentless: the text is stored once, in `messages`.
-- A message's entry is keyed by its session's rowid and its position (sessions.rowid * 2^20 +
-- position), so that a session's entries go with it.
CREATE VIRTUAL TABLE message_search USING fts5(text, content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER message_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO message_search (rowid, text)
    SELECT s.rowid * 1048576 + new.position,
           (SELECT coalesce(group_concat(t.value, ' '), '') FROM json_tree(new.blocks) AS t
             WHERE t.type = 'text'
               AND t.key IN ('text', 'result', 'command', 'description', 'question', 'label', 'other', 'notes', 'plan'))
      FROM sessions AS s WHERE s.id = new.session_id;
END;

CREATE TRIGGER message_search_update AFTER UPDATE OF blocks ON messages BEGIN
    DELETE FROM message_search
     WHERE rowid = (SELECT s.rowid * 1048576 + new.position FROM sessions AS s WHERE s.id = new.session_id);
    INSERT INTO message_search (rowid, text)
    SELECT s.rowid * 1048576 + new.position,
           (SELECT coalesce(group_concat(t.value, ' '), '') FROM json_tree(new.blocks) AS t
             WHERE t.type = 'text'
               AND t.key IN ('text', 'result', 'command', 'description', 'question', 'label', 'other', 'notes', 'plan'))
      FROM sessions AS s WHERE s.id = new.session_id;
END;

-- A session's messages go when it does (ON DELETE CASCADE), after it: their entries go with it.
CREATE TRIGGER message_search_session_delete AFTER DELETE ON sessions BEGIN
    DELETE FROM message_search WHERE rowid BETWEEN old.rowid * 1048576 AND old.rowid * 1048576 + 1048575;
END;

-- The messages written before this migration.
INSERT INTO message_search (rowid, text)
SELECT s.rowid * 1048576 + m.position,
       (SELECT coalesce(group_concat(t.value, ' '), '') FROM json_tree(m.blocks) AS t
         WHERE t.type = 'text'
           AND t.key IN ('text', 'result', 'command', 'description', 'question', 'label', 'other', 'notes', 'plan'))
  FROM messages AS m JOIN sessions AS s ON s.id = m.session_id;
