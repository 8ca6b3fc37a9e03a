-- The fencing token of a session's lease (issue 20): drawn anew each time a server takes the
-- lease from another (or takes a free one), kept while the same server renews it. An agent's
-- writes carry it; once another server holds the lease, they are refused.
ALTER TABLE session_leases ADD COLUMN fence TEXT NOT NULL DEFAULT '';
