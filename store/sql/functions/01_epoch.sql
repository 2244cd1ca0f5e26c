-- Tokens: the epoch and the draw.

-- distributed_lock_timeline is the WAL timeline this server writes on: the
-- first eight hex digits of the name of the WAL file being written
-- (PostgreSQL 15 names it by the insert timeline, so it is current from the
-- moment a promotion ends). The one place the timeline is read. Inlined.
CREATE OR REPLACE FUNCTION distributed_lock_timeline() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
$$;

-- distributed_lock_advance_epoch keeps tokens rising across promotions
-- (locker/doc.go, "Failover", says why this holds). The epoch is the
-- server's timeline plus a base that only changes when the row was written
-- by another cluster (dump and restore) or, which one lineage never does, a
-- lower timeline. Every promotion starts a timeline higher than any its
-- ancestors wrote on, so a promoted standby that missed the last grants
-- moves the sequence to at least (its timeline + base) << 40, above every
-- token of the old timeline. The move is done once, under the row's lock:
-- a concurrent grant waits for it and then sees the row current. setval is
-- not transactional; if the caller rolls back, the sequence stays moved
-- (tokens only rise) and the next grant moves it again, which is then a
-- no-op. Returns the epoch. Migrate calls it, which moves an existing
-- database's sequence at once.
CREATE OR REPLACE FUNCTION distributed_lock_advance_epoch() RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    tl bigint := distributed_lock_timeline();
    sysid bigint := (SELECT c.system_identifier FROM pg_control_system() c);
    st distributed_lock_epoch;
    lowest bigint;
BEGIN
    SELECT * INTO STRICT st FROM distributed_lock_epoch FOR UPDATE;
    IF st.system_id IS NOT DISTINCT FROM sysid AND st.timeline = tl THEN
        RETURN tl + st.base;
    END IF;
    IF st.system_id IS DISTINCT FROM sysid OR tl < st.timeline THEN
        -- Every server of the new cluster computes this same base from the
        -- same restored row, so their epochs still follow their timelines.
        st.base := st.timeline + st.base;
    END IF;
    lowest := (tl + st.base) << 40;
    IF nextval('distributed_lock_fence_seq') < lowest THEN
        PERFORM setval('distributed_lock_fence_seq', lowest, false);
    END IF;
    UPDATE distributed_lock_epoch SET system_id = sysid, timeline = tl, base = st.base;
    RETURN tl + st.base;
END $$;

-- distributed_lock_next_token moves the sequence into this timeline's
-- epoch, then draws a token: a timeline's first grant.
CREATE OR REPLACE FUNCTION distributed_lock_next_token() RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM distributed_lock_advance_epoch();
    RETURN nextval('distributed_lock_fence_seq');
END $$;

-- distributed_lock_draw_token draws a grant's token, under the key's row
-- lock (or, for a key's first grant, under the prune gate): the next value
-- of the sequence when the epoch row (epoch_timeline: its timeline, which
-- the caller reads as (SELECT e.timeline FROM distributed_lock_epoch e), so
-- that only a grant that draws reads it) is on the server's timeline, else
-- after moving the sequence into the new epoch. The one place a token is
-- drawn. Inlined: it costs a grant no function call.
CREATE OR REPLACE FUNCTION distributed_lock_draw_token(epoch_timeline bigint) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN epoch_timeline = distributed_lock_timeline()
                THEN nextval('distributed_lock_fence_seq')
                ELSE distributed_lock_next_token() END
$$;
