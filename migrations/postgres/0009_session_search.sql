-- Searching sessions by what was written in them: a full-text index over the text of each message
-- (what people and agents wrote, commands, results, questions and answers; not ids, states or
-- image data).
CREATE FUNCTION askbridge_message_text(blocks jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(found.value #>> '{}', ' '), '')
      FROM (
        SELECT jsonb_path_query(blocks, 'strict $.**.text ? (@.type() == "string")') AS value
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.result ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.command ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.description ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.question ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.label ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.other ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.notes ? (@.type() == "string")')
        UNION ALL SELECT jsonb_path_query(blocks, 'strict $.**.plan ? (@.type() == "string")')
      ) AS found
$$;

CREATE INDEX messages_search ON messages USING gin (to_tsvector('simple', askbridge_message_text(blocks)));
