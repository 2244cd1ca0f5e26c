-- Leader election on an ordinary exclusive key (docs/protocol.md,
-- "Elections"). A candidate campaigns by acquiring the key, waiting in its
-- queue; the holder is the leader, its fencing token the term, and the
-- key's metadata carries {"election": true, "value": …}: the mark the
-- console shows and the value the leader proclaims. Resigning is a release,
-- which hands the key to the next candidate queued; a leader that dies is
-- followed when its lease expires. Nothing here is on the plain grant path.

-- distributed_lock_leader_row: l is key's own row (slot 0), the one whose
-- holder leads. The one place an election names the row it reads. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_leader_row(l distributed_lock, key text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT l.lock_key = key AND l.slot = 0
$$;

-- distributed_lock_leader returns key's leader: one row with its owner,
-- term (fence_token), value and lease end, and the protocol's now, while
-- an election key's lease runs; no row when nobody leads. Observers read
-- the truth here after every notification: a NOTIFY is only a hint.
CREATE OR REPLACE FUNCTION distributed_lock_leader(
    key text,
    OUT owner_id text, OUT term bigint, OUT value jsonb, OUT expires_at timestamptz, OUT now timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := distributed_lock_now();
BEGIN
    RETURN QUERY
    SELECT l.owner_id::text, l.fence_token, l.metadata -> 'value', l.expires_at, ts
    FROM distributed_lock l
    WHERE distributed_lock_leader_row(l, key) AND l.metadata ? 'election'
      AND distributed_lock_live(l, ts) AND NOT distributed_lock_is_group(l);
END $$;

-- distributed_lock_proclaim sets the value of owner's leadership of key,
-- the lease granted with token (the term), and tells observers: a NOTIFY on
-- the shared channel distributed_lock with the key as payload. Only the
-- current leader's own role may proclaim (as renew judges a lease, after
-- the row lock): false otherwise, and nothing changes or is sent. A
-- candidate that wins proclaims once, so observers hear of the new term.
CREATE OR REPLACE FUNCTION distributed_lock_proclaim(key text, owner text, token bigint, value jsonb)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r distributed_lock;
    ts timestamptz;
BEGIN
    SELECT * INTO r FROM distributed_lock l
    WHERE distributed_lock_leader_row(l, key) AND l.owner_id = owner AND l.fence_token = token
    FOR NO KEY UPDATE;
    ts := distributed_lock_now();
    IF NOT FOUND OR NOT distributed_lock_held(r, owner, session_user, ts) THEN
        RETURN false;
    END IF;
    UPDATE distributed_lock l
    SET metadata = (l.metadata || jsonb_build_object('election', true, 'value', value))::distributed_lock_metadata
    WHERE distributed_lock_leader_row(l, key);
    PERFORM pg_notify('distributed_lock', key);
    RETURN true;
END $$;
