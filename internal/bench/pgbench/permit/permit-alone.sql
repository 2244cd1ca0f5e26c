-- A permit of a semaphore of 4 nobody else holds, taken and given back.
SELECT distributed_lock_release(a.lock_key, a.owner_id, a.fence_token) FROM distributed_lock_acquire_shared('s1', 'o1', 30000000::bigint, 4) a;
