-- Wake-ups reach the processes that wait, not every listener (docs/queue.md,
-- "Who hears a wake-up"). A waiter record names the channel its process
-- LISTENs on (wake_channel; locker.Notifier has one of its own); a record
-- without one, a client that passed none, is woken on the shared channels:
-- distributed_lock_handoff for hand-offs and distributed_lock, with the key
-- as payload, for wake-ups. On a named channel every payload is JSON that
-- names the lock schema (channels are per database, waiter ids per schema):
-- a hand-off's grant, or {"schema", "key"} for a wake-up, which names no
-- waiter.

-- distributed_lock_schema is the lock schema's name, as a payload names it:
-- the schema of the lock tables these functions use (their current_schema()
-- is pg_catalog, first on their path). Internal.
CREATE OR REPLACE FUNCTION distributed_lock_schema()
RETURNS text
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN (SELECT n.nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid
            WHERE c.oid = 'distributed_lock'::regclass);
END $$;

-- distributed_lock_wake_channel wakes the waiters of key that listen on
-- channel (a record's wake_channel; NULL: the shared distributed_lock) to
-- check the queue. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_wake_channel(channel text, key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    IF channel IS NULL THEN
        PERFORM pg_notify('distributed_lock', key);
    ELSE
        PERFORM pg_notify(channel, json_build_object('schema', distributed_lock_schema(), 'key', key)::text);
    END IF;
END $$;

-- distributed_lock_wake wakes the processes waiting for key to check the
-- queue (a release with nobody to hand to, a key in its lock-delay, an
-- operator's action): one NOTIFY per channel its waiter records name, live
-- or lapsed (a process whose record lapsed while it waited learns so at its
-- check, rather than at its next timer), in channel order, the shared one
-- last. A key with no record sends nothing: nobody waits for it.
-- Internal.
CREATE OR REPLACE FUNCTION distributed_lock_wake(key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    channel text;
BEGIN
    FOR channel IN SELECT DISTINCT w.wake_channel FROM distributed_lock_waiter w WHERE w.lock_key = key ORDER BY 1 LOOP
        PERFORM distributed_lock_wake_channel(channel, key);
    END LOOP;
END $$;

-- distributed_lock_announce sends the hand-off payload of key's grant to
-- waiter record w (consumed by the grant) to w's process and to the process
-- of the record now at the head of key's queue, the next to be served, when
-- that is another channel: the head learns when the new lease ends at the
-- latest (its claim window), so it wakes then if the new holder died
-- without claiming it, and takes the key over. Waiters behind the head
-- hear nothing: they are not served before it. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_announce(w distributed_lock_waiter, ts timestamptz, payload text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    mine text := coalesce(w.wake_channel, 'distributed_lock_handoff');
    head text;
BEGIN
    PERFORM pg_notify(mine, payload);
    SELECT coalesce(x.wake_channel, 'distributed_lock_handoff') INTO head
    FROM distributed_lock_waiter x
    WHERE x.lock_key = w.lock_key AND x.seen_until > ts AND x.ttl IS NOT NULL
    ORDER BY x.waiter_id LIMIT 1;
    IF head <> mine THEN
        PERFORM pg_notify(head, payload);
    END IF;
END $$;
