-- The folder a session's agent works in, when it is not the server's default.
ALTER TABLE sessions ADD COLUMN workdir text;
