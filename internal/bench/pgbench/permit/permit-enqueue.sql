-- A waiting acquire's enqueue, granted at once beside another holder, and
-- the permit given back.
SELECT distributed_lock_release(a.lock_key, a.owner_id, a.fence_token) FROM distributed_lock_enqueue_shared('s3', 'o1', 30000000::bigint, 4, 1000000::bigint, 3000000::bigint) a;
