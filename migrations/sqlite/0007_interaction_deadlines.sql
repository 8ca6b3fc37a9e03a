-- When an open question or permission request expires (--question-timeout, --approval-timeout),
-- in ms since the epoch: set as it opens, so that parking and restarts keep it. Every server arms
-- its timer from the next one (`Store::interaction_deadlines`).
ALTER TABLE interactions ADD COLUMN expires_at_ms INTEGER;
CREATE INDEX interactions_by_deadline ON interactions (expires_at_ms)
    WHERE state = 'pending' AND expires_at_ms IS NOT NULL;
