-- Signatures of earlier releases that this build's functions no longer
-- have. CREATE OR REPLACE makes a function whose arguments changed beside
-- the old one, not in its place, and a call may match both (a call of the
-- two arguments both share is ambiguous): a database migrated from such a
-- release drops the old one here.

-- v0.1.0: the one hand-off gained beside (05_queue.sql).
DROP FUNCTION IF EXISTS distributed_lock_hand_off(text, timestamptz);
-- v0.1.0: the lazy commit became a rule that returns set_config's answer
-- (04_lease.sql), under a name of its own: a return type cannot be replaced.
DROP FUNCTION IF EXISTS distributed_lock_commit_lazily(boolean);
