-- One lock cycle as locker runs it: distributed_lock_acquire, then a lazily
-- committed distributed_lock_release, each client on keys of its own.
\set k random(1, 200)
SELECT a.fence_token AS tok FROM distributed_lock_acquire('k' || :client_id || '-' || :k, 'o' || :client_id, 30000000::bigint, NULL::jsonb, NULL::text, NULL::jsonb, false) a WHERE a.outcome <> 'busy' \gset
SELECT r.outcome FROM distributed_lock_release('k' || :client_id || '-' || :k, 'o' || :client_id, :tok, true, false, NULL) r WHERE r.outcome = 'released';
