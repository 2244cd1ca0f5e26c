-- A lock cycle with one renewal, as a keepalive makes it: the locker's
-- cycle (locker-cycle.sql) with a distributed_lock_renew between, read as
-- locker reads it (store/lease.go); less the cycle, a renewal's cost.
\set k random(1, 200)
SELECT a.fence_token AS tok FROM distributed_lock_acquire('k' || :client_id || '-' || :k, 'o' || :client_id, 30000000::bigint, NULL::jsonb, NULL::text, NULL::jsonb, false) a WHERE a.outcome <> 'busy' \gset
SELECT r.lock_key, r.owner_id, r.fence_token, r.expires_at, r.ttl, r.requested_at, r.reason, r.actor, r.caller_role, r.force_at, r.remaining FROM distributed_lock_renew('k' || :client_id || '-' || :k, 'o' || :client_id, :tok, 30000000::bigint) r WHERE r.outcome = 'renewed';
SELECT r.outcome FROM distributed_lock_release('k' || :client_id || '-' || :k, 'o' || :client_id, :tok, true, false, NULL) r WHERE r.outcome = 'released';
