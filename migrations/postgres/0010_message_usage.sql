-- What a turn used (tokens, cost, how full the context was), on the turn's last reply.
ALTER TABLE messages ADD COLUMN usage jsonb;
