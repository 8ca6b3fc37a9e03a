-- A tool call's arguments that streamed into the session's file beside the database (a file
-- written, an edit: large, and nothing search reads) are not copied into its message's row: the
-- row leaves the input out and says here where the file has it, as JSON of each such call's id
-- and the sequence number its pieces follow (`store/streamed.rs`). The copy cost 0.8 bytes to the
-- disk per byte streamed (BENCHMARKS.md, "A tool call's arguments stored once"). NULL: the row
-- holds every input it has.
ALTER TABLE messages ADD COLUMN streamed_inputs TEXT;
