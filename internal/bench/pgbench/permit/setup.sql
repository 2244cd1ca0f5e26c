-- The permit cycles' keys (BENCHMARKS.md, "Shared leases and semaphores"),
-- after `lockctl migrate`: s2 and s3 semaphores of 4 permits, each with one
-- holder for an hour, beside whom permit-beside.sql and permit-enqueue.sql
-- take a permit and give it back; s1 has none, so permit-alone.sql forms
-- and ends its group every cycle.
SELECT distributed_lock_acquire_shared('s2', 'holder', 3600000000::bigint, 4);
SELECT distributed_lock_acquire_shared('s3', 'holder', 3600000000::bigint, 4);
