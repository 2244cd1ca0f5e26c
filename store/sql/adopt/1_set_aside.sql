-- Adopting the reference service's table, part 1 of 2: migration 1's
-- alternative for a database that already holds a distributed_lock (the
-- Java/Spring DistributedLockService lockctl started from: docs/operations.md,
-- "Switch-over from the reference service"). It made distributed_lock with
-- four columns, lock_key varchar(255) PRIMARY KEY, owner_id varchar(255),
-- fence_token bigint (epoch milliseconds) and expires_at timestamp WITHOUT
-- time zone (the JVM's local time), and deletes rows on release: every row
-- is a lock that is held or expired.
--
-- Runs before migration 1, in its transaction: it checks the table and its
-- rows and moves it aside (distributed_lock_adopting); migration 1 then
-- makes lockctl's table, and part 2 copies the rows in. The table is
-- adopted only when lockctl.adopt_reference is on; otherwise, or when the table
-- is not the reference's, or a row breaks lockctl's rules (each is named),
-- it raises SQLSTATE LKA01 and the transaction changes nothing.
DO $$
DECLARE
    cols text;
    bad  text[];
    nbad bigint;
BEGIN
    IF to_regclass('distributed_lock') IS NULL THEN
        RETURN; -- a new database: nothing to adopt
    END IF;
    SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass AND attnum > 0 AND NOT attisdropped;
    IF (SELECT count(*) FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
            AND attnum > 0 AND NOT attisdropped) <> 4
       OR NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
            AND attname = 'lock_key' AND atttypid IN ('varchar'::regtype, 'text'::regtype))
       OR NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
            AND attname = 'owner_id' AND atttypid IN ('varchar'::regtype, 'text'::regtype))
       OR NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
            AND attname = 'fence_token' AND atttypid IN ('bigint'::regtype, 'integer'::regtype))
       OR NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
            AND attname = 'expires_at' AND atttypid IN ('timestamp'::regtype, 'timestamptz'::regtype))
       OR NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a
                ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid = 'distributed_lock'::regclass AND i.indisprimary
              AND i.indnatts = 1 AND a.attname = 'lock_key') THEN
        RAISE EXCEPTION USING ERRCODE = 'LKA01',
            MESSAGE = format('distributed_lock is neither lockctl''s table nor the reference service''s '
                '(lock_key varchar PRIMARY KEY, owner_id varchar, fence_token bigint, expires_at timestamp); '
                'its columns: %s. Nothing was changed.', cols);
    END IF;
    -- Only when asked (`lockctl migrate` asks): a service that migrates at
    -- start-up must not take the table over while the reference service may
    -- still be writing it.
    IF coalesce(current_setting('lockctl.adopt_reference', true), '') <> 'on' THEN
        RAISE EXCEPTION USING ERRCODE = 'LKA01',
            MESSAGE = 'distributed_lock is the reference service''s table, not migrated: adopt it with '
                '`lockctl migrate` once the reference service is stopped (docs/operations.md, switch-over). '
                'Nothing was changed.';
    END IF;
    -- Every rule of the domains and NOT NULLs, so that the message names
    -- the rows instead of the first failing cast; keys as JSON strings, so
    -- control characters in them reach no terminal.
    SELECT count(*), (array_agg(format('lock_key %s: %s', to_json(left(r.lock_key, 64)), r.problem)
                                ORDER BY r.lock_key))[1:10]
    INTO nbad, bad
    FROM (
        SELECT l.lock_key::text AS lock_key, concat_ws('; ',
            CASE WHEN octet_length(l.lock_key) = 0 THEN 'lock_key is empty' END,
            CASE WHEN octet_length(l.lock_key) > 255
                 THEN format('lock_key is %s bytes, more than 255', octet_length(l.lock_key)) END,
            CASE WHEN l.owner_id IS NULL THEN 'owner_id is NULL'
                 WHEN octet_length(l.owner_id) = 0 THEN 'owner_id is empty'
                 WHEN octet_length(l.owner_id) > 255
                 THEN format('owner_id is %s bytes, more than 255', octet_length(l.owner_id)) END,
            CASE WHEN l.fence_token IS NULL THEN 'fence_token is NULL'
                 WHEN l.fence_token <= 0 THEN format('fence_token is %s, not positive', l.fence_token) END,
            CASE WHEN l.expires_at IS NULL THEN 'expires_at is NULL'
                 WHEN NOT isfinite(l.expires_at) THEN format('expires_at is %s', l.expires_at) END
        ) AS problem
        FROM distributed_lock l
    ) r
    WHERE r.problem <> '';
    IF nbad > 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'LKA01',
            MESSAGE = format(E'distributed_lock (the reference service''s table) has %s row(s) lockctl cannot adopt; '
                'fix or delete them with the reference service stopped, then migrate again. Nothing was changed.\n%s%s',
                nbad, array_to_string(bad, E'\n'),
                CASE WHEN nbad > 10 THEN format(E'\n… and %s more', nbad - 10) ELSE '' END);
    END IF;
    ALTER TABLE distributed_lock RENAME TO distributed_lock_adopting;
    ALTER INDEX IF EXISTS distributed_lock_pkey RENAME TO distributed_lock_adopting_pkey;
END $$;
