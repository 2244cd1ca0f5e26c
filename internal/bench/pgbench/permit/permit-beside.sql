-- A permit taken beside another holder's and given back.
SELECT distributed_lock_release(a.lock_key, a.owner_id, a.fence_token) FROM distributed_lock_acquire_shared('s2', 'o1', 30000000::bigint, 4) a;
