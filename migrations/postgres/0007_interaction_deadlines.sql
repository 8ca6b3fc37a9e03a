-- When an open question or permission request expires (--question-timeout, --approval-timeout):
-- set as it opens, so that parking and restarts keep it. Every server arms its timer from the
-- next one (`Store::interaction_deadlines`).
ALTER TABLE interactions ADD COLUMN expires_at timestamptz;
CREATE INDEX interactions_by_deadline ON interactions (expires_at)
    WHERE state = 'pending' AND expires_at IS NOT NULL;
