-- lockctl schema: the one source of truth, applied by `lockctl migrate`.
-- Idempotent: every statement can run again on a migrated database.
-- Objects are created unqualified, in the first schema of search_path, so a
-- database can hold several independent lock namespaces (one per schema).

-- Fencing tokens. One sequence for every key, so tokens are unique across
-- keys; CACHE 1 so tokens are handed out in the order they are drawn
-- (a per-backend cache would let a later grant get a smaller number); NO CYCLE
-- so it stops rather than wraps.
CREATE SEQUENCE IF NOT EXISTS distributed_lock_fence_seq
    AS bigint MINVALUE 1 START WITH 1 INCREMENT BY 1 CACHE 1 NO CYCLE;

-- The token epoch (distributed_lock_advance_epoch): the one row says for
-- which cluster (pg_control_system's system_identifier) and WAL timeline the
-- sequence was last moved, and the base added to the timeline to make the
-- epoch. Tokens drawn on epoch e are at least e << 40. A new row (no
-- cluster, timeline 0) makes the first grant or migrate move the sequence.
CREATE TABLE IF NOT EXISTS distributed_lock_epoch (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    system_id bigint,
    timeline  bigint NOT NULL,
    base      bigint NOT NULL
);
INSERT INTO distributed_lock_epoch (timeline, base) VALUES (0, 0) ON CONFLICT DO NOTHING;

-- Value rules, as domains rather than table CHECK constraints: PostgreSQL
-- parses and plans a table's CHECK constraints again on every INSERT or
-- UPDATE statement (about a fifth of a grant's server CPU with eight of
-- them), while a domain's rules are parsed once per session and cached.
-- Same bounds as locker.ValidateKey / locker.ValidateOwner. CREATE DOMAIN
-- has no IF NOT EXISTS, hence the blocks.
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_name AS text
        CHECK (octet_length(VALUE) BETWEEN 1 AND 255);
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_token AS bigint CHECK (VALUE > 0);
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_ttl AS interval CHECK (VALUE > interval '0');
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_grant_kind AS text CHECK (VALUE IN ('acquired', 'stolen'));
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_metadata AS jsonb CHECK (jsonb_typeof(VALUE) = 'object');
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
    CREATE DOMAIN distributed_lock_event_kind AS text CHECK (VALUE IN (
        'acquired', 'stolen', 'released', 'force_expired', 'force_released',
        'stale_write_rejected'));
EXCEPTION WHEN duplicate_object THEN NULL; END $$;

-- Adopt the reference service's table (the Java/Spring DistributedLockService
-- lockctl started from: docs/operations.md, "Switch-over from the reference
-- service"). It made distributed_lock with four columns, lock_key varchar(255)
-- PRIMARY KEY, owner_id varchar(255), fence_token bigint (epoch milliseconds)
-- and expires_at timestamp WITHOUT time zone (the JVM's local time), and
-- deletes rows on release: every row is a lock that is held or expired. This
-- block acts only on that shape, in place and in migrate's transaction: the
-- four columns move to the domains, expires_at is read in the zone the JVM
-- ran in (lockctl.seed_time_zone, else the session's TimeZone), the columns
-- lockctl adds are filled in, and the token sequence moves above the largest
-- token, so every held lock keeps its owner, token and expiry instant and
-- the next grant's token is larger than every old one. It adopts only when
-- lockctl.adopt_seed is on; otherwise, or when a row breaks lockctl's rules
-- (each is named), it raises SQLSTATE LKA01 and nothing is changed.
DO $$
DECLARE
    zone     text := coalesce(nullif(current_setting('lockctl.seed_time_zone', true), ''),
                              current_setting('TimeZone'));
    cols     text;
    bad      text[];
    nbad     bigint;
    adopted  timestamptz := clock_timestamp();
BEGIN
    IF to_regclass('distributed_lock') IS NULL OR EXISTS (
        SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('distributed_lock')
            AND attname = 'ttl' AND NOT attisdropped) THEN
        RETURN; -- no table yet, or lockctl's own
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
    IF coalesce(current_setting('lockctl.adopt_seed', true), '') <> 'on' THEN
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
    -- AT TIME ZONE takes the zone as a value; the statement is built only
    -- because ALTER TABLE cannot take parameters.
    EXECUTE format($sql$
        ALTER TABLE distributed_lock
            ALTER COLUMN lock_key TYPE distributed_lock_name,
            ALTER COLUMN owner_id TYPE distributed_lock_name,
            ALTER COLUMN owner_id SET NOT NULL,
            ALTER COLUMN fence_token TYPE distributed_lock_token,
            ALTER COLUMN fence_token SET NOT NULL,
            ALTER COLUMN expires_at TYPE timestamptz USING %s,
            ALTER COLUMN expires_at SET NOT NULL,
            ADD COLUMN ttl distributed_lock_ttl,
            ADD COLUMN acquired_at timestamptz,
            ADD COLUMN renewed_at timestamptz,
            ADD COLUMN renew_count integer NOT NULL DEFAULT 0,
            ADD COLUMN released_at timestamptz,
            ADD COLUMN grant_kind distributed_lock_grant_kind NOT NULL DEFAULT 'acquired',
            ADD COLUMN previous_owner text,
            ADD COLUMN previous_token bigint,
            ADD COLUMN metadata distributed_lock_metadata NOT NULL DEFAULT '{}',
            ADD COLUMN wake_until timestamptz$sql$,
        CASE WHEN (SELECT atttypid FROM pg_attribute WHERE attrelid = 'distributed_lock'::regclass
                   AND attname = 'expires_at') = 'timestamp'::regtype
             THEN format('expires_at AT TIME ZONE %L', zone) ELSE 'expires_at' END);
    -- The reference recorded neither when a lock was taken nor its TTL: a
    -- lock counts as taken at the adoption, with the lease it has left (an
    -- expired one: a nominal millisecond, as the domain wants a length).
    UPDATE distributed_lock
    SET acquired_at = adopted,
        ttl = greatest(expires_at - adopted, interval '1 millisecond');
    ALTER TABLE distributed_lock
        ALTER COLUMN ttl SET NOT NULL,
        ALTER COLUMN acquired_at SET NOT NULL;
    PERFORM setval('distributed_lock_fence_seq', max(fence_token)) FROM distributed_lock
    HAVING max(fence_token) >= (SELECT last_value FROM distributed_lock_fence_seq);
    RAISE NOTICE 'adopted the reference service''s distributed_lock: expires_at read in time zone %', zone;
END $$;

-- One row per key. A released lock keeps its row (released_at set) so the
-- next grant on the key always updates a locked row and draws its token
-- there; `lockctl prune` deletes rows that stayed free past a retention.
CREATE TABLE IF NOT EXISTS distributed_lock (
    lock_key       distributed_lock_name  PRIMARY KEY,
    owner_id       distributed_lock_name  NOT NULL, -- holder, or last holder when free
    fence_token    distributed_lock_token NOT NULL,
    expires_at     timestamptz NOT NULL,          -- database clock
    ttl            distributed_lock_ttl NOT NULL,          -- lease length of the last grant or renewal
    acquired_at    timestamptz NOT NULL,          -- start of the current grant
    renewed_at     timestamptz,
    renew_count    integer     NOT NULL DEFAULT 0,
    released_at    timestamptz,                   -- set: the lock is free (expires_at is then the old lease's)
    grant_kind     distributed_lock_grant_kind NOT NULL DEFAULT 'acquired',
    previous_owner text,
    previous_token bigint,
    metadata       distributed_lock_metadata NOT NULL DEFAULT '{}',
    wake_until     timestamptz                    -- someone may wait for the key until then: a release NOTIFYs
) WITH (fillfactor = 80);
-- For tables made before wake_until (waiters set it on the row they wait
-- for, see distributed_lock_waiter; a release reads it under its row lock).
-- Only when missing: ALTER TABLE takes an exclusive lock even when IF NOT
-- EXISTS finds the column, which a no-op migrate must not.
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'distributed_lock'::regclass AND attname = 'wake_until'
                     AND NOT attisdropped) THEN
        ALTER TABLE distributed_lock ADD COLUMN wake_until timestamptz;
    END IF;
END $$;
-- Room on each page lets grants, renewals and releases be HOT updates: a
-- heap write with no index writes. For tables made before.
ALTER TABLE distributed_lock SET (fillfactor = 80);

-- The primary key is the table's only index, on purpose: every grant,
-- renewal and release changes owner_id, fence_token, expires_at,
-- acquired_at or released_at, and an index on any of them makes each of
-- those writes a non-HOT update that inserts into every index (what that
-- costs: BENCHMARKS.md). The console's orders other than by key read the
-- table with a bounded top-N sort instead, once per refresh while the
-- selection stays put (lockview.ListLocks, lockview.Span). Migrate drops
-- indexes of these names, so a table made with them regains HOT updates;
-- an operator who wants index-backed console sorts on millions of locks can
-- create them under other names (docs/operations.md, "Large tables"), which
-- migrate leaves alone. DROP INDEX IF EXISTS takes no lock when the index
-- is already gone.
DROP INDEX IF EXISTS distributed_lock_expires_idx, distributed_lock_token_idx,
    distributed_lock_acquired_idx, distributed_lock_released_idx;

-- Append-only history: grants, steals, releases, operator actions and
-- rejected stale writes. Renewals are not logged (they are counted in
-- distributed_lock.renew_count) so keepalive traffic stays cheap.
CREATE TABLE IF NOT EXISTS distributed_lock_event (
    event_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    lock_key       text        NOT NULL,
    kind           distributed_lock_event_kind NOT NULL,
    owner_id       text,
    fence_token    bigint,
    actor          distributed_lock_name NOT NULL,
    previous_owner text,
    previous_token bigint,
    detail         jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS distributed_lock_event_key_idx ON distributed_lock_event (lock_key, event_id DESC);
-- Time ranges (the console's rates, prune): events are appended in time order,
-- so a BRIN index answers them at almost no cost per insert.
CREATE INDEX IF NOT EXISTS distributed_lock_event_time_brin ON distributed_lock_event USING brin (occurred_at);
DROP INDEX IF EXISTS distributed_lock_event_time_idx;

-- History is not rewritten: updates are refused (old events may be deleted
-- by `lockctl prune --events-older`).
CREATE OR REPLACE FUNCTION distributed_lock_event_immutable() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'distributed_lock_event is append-only';
END $$;
CREATE OR REPLACE TRIGGER distributed_lock_event_no_update BEFORE UPDATE ON distributed_lock_event
    FOR EACH ROW EXECUTE FUNCTION distributed_lock_event_immutable();

-- Acquirers that are waiting (locker.Acquire), so the console can show
-- queues. A waiter refreshes seen_until while it waits; a row whose
-- seen_until has passed belongs to a waiter that died and is ignored.
CREATE TABLE IF NOT EXISTS distributed_lock_waiter (
    waiter_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lock_key      distributed_lock_name NOT NULL,
    owner_id      distributed_lock_name NOT NULL,
    waiting_since timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_until    timestamptz NOT NULL
);
-- The queue of a key is its waiter rows in waiter_id order (drawn at
-- arrival); a hand-off reads its head by this index. It also serves every
-- other read of one key's waiters (nothing orders a key's waiters by
-- waiting_since), so migrate drops a (lock_key, waiting_since) index of the
-- name below rather than write a second index on every enqueue.
CREATE INDEX IF NOT EXISTS distributed_lock_waiter_queue_idx ON distributed_lock_waiter (lock_key, waiter_id);
DROP INDEX IF EXISTS distributed_lock_waiter_key_idx;

-- The fair queue (distributed_lock_enqueue, distributed_lock_hand_off): a
-- waiter row carries the lease its waiter asked for, so a release can grant
-- it in the same transaction; the lock row names the waiter it was handed
-- to, so a waiter that missed the NOTIFY finds its grant by polling. Added
-- only when missing (see wake_until).
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'distributed_lock'::regclass AND attname = 'handed_to'
                     AND NOT attisdropped) THEN
        ALTER TABLE distributed_lock ADD COLUMN handed_to bigint;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = 'distributed_lock_waiter'::regclass AND attname = 'claim_window'
                     AND NOT attisdropped) THEN
        ALTER TABLE distributed_lock_waiter
            ADD COLUMN ttl interval,          -- lease length the waiter asked for
            ADD COLUMN claim_window interval, -- first lease of a hand-off: least(claim_window, ttl)
            ADD COLUMN metadata jsonb,
            ADD COLUMN log_grants boolean NOT NULL DEFAULT false,
            ADD COLUMN actor text;
    END IF;
END $$;

-- Upgrade a database migrated before the domains: drop the table CHECK
-- constraints and move the columns onto the domains (same base types, so no
-- table rewrite). Only when needed: ALTER COLUMN TYPE takes an exclusive
-- lock on the table, which a no-op migrate must not.
DO $$ BEGIN
    IF (SELECT atttypid FROM pg_attribute
        WHERE attrelid = 'distributed_lock'::regclass AND attname = 'lock_key')
       <> 'distributed_lock_name'::regtype THEN
        ALTER TABLE distributed_lock
            DROP CONSTRAINT IF EXISTS distributed_lock_key_length,
            DROP CONSTRAINT IF EXISTS distributed_lock_owner_length,
            DROP CONSTRAINT IF EXISTS distributed_lock_token_positive,
            DROP CONSTRAINT IF EXISTS distributed_lock_ttl_positive,
            DROP CONSTRAINT IF EXISTS distributed_lock_grant_kind,
            DROP CONSTRAINT IF EXISTS distributed_lock_metadata_object,
            ALTER COLUMN lock_key TYPE distributed_lock_name,
            ALTER COLUMN owner_id TYPE distributed_lock_name,
            ALTER COLUMN fence_token TYPE distributed_lock_token,
            ALTER COLUMN ttl TYPE distributed_lock_ttl,
            ALTER COLUMN grant_kind TYPE distributed_lock_grant_kind,
            ALTER COLUMN metadata TYPE distributed_lock_metadata;
    END IF;
    IF (SELECT atttypid FROM pg_attribute
        WHERE attrelid = 'distributed_lock_event'::regclass AND attname = 'kind')
       <> 'distributed_lock_event_kind'::regtype THEN
        ALTER TABLE distributed_lock_event
            DROP CONSTRAINT IF EXISTS distributed_lock_event_kind,
            DROP CONSTRAINT IF EXISTS distributed_lock_event_actor_length,
            ALTER COLUMN kind TYPE distributed_lock_event_kind,
            ALTER COLUMN actor TYPE distributed_lock_name;
    END IF;
    IF (SELECT atttypid FROM pg_attribute
        WHERE attrelid = 'distributed_lock_waiter'::regclass AND attname = 'lock_key')
       <> 'distributed_lock_name'::regtype THEN
        ALTER TABLE distributed_lock_waiter
            DROP CONSTRAINT IF EXISTS distributed_lock_waiter_key_length,
            DROP CONSTRAINT IF EXISTS distributed_lock_waiter_owner_length,
            ALTER COLUMN lock_key TYPE distributed_lock_name,
            ALTER COLUMN owner_id TYPE distributed_lock_name;
    END IF;
END $$;

-- Whether anyone waits on a key, read with a fresh snapshot. Releases no
-- longer call it (they read distributed_lock.wake_until, which costs no
-- function call); it stays for lockctl binaries from before that change,
-- so a rolling upgrade keeps their releases working. Waiters still record
-- themselves in distributed_lock_waiter, so its answer stays right.
CREATE OR REPLACE FUNCTION distributed_lock_has_waiters(key text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w
                   WHERE w.lock_key = key AND w.seen_until > clock_timestamp());
END $$;

-- ---------------------------------------------------------------------------
-- The lock protocol, as functions. Every write to the tables above goes
-- through one of these: they run as their owner (SECURITY DEFINER, the role
-- that migrates), so a role granted EXECUTE on them needs, and gets, no
-- INSERT, UPDATE or DELETE on any table or the token sequence, and cannot
-- forge a token, revive a lease or touch the history (internal/roles).
-- Because the contract is SQL, a client in any language gets the same
-- guarantees (docs/protocol.md: arguments, result columns, outcomes).
--
-- Each function pins search_path (SET search_path FROM CURRENT) to the one
-- set here: the lock schema, where the function itself is created (objects
-- created unqualified go to the first schema of the path), then pg_catalog,
-- then pg_temp last, so no temporary object can stand in for a lock table.
-- It is taken from current_schema(), so every lock namespace (schema) gets
-- functions on its own tables. Only the migrating role may create objects
-- in the lock schema (lockctl grant gives other roles USAGE, never CREATE),
-- so nothing there can stand in for a built-in either. Transaction-local:
-- schema.sql runs in one transaction (lockctl migrate, or psql -1).
SELECT pg_catalog.set_config('search_path',
    pg_catalog.quote_ident(pg_catalog.current_schema()) || ', pg_catalog, pg_temp', true);

-- distributed_lock_advance_epoch keeps tokens rising across promotions
-- (locker/doc.go, "Failover", says why this holds). The epoch is the WAL
-- timeline this server writes on (the first eight hex digits of the name of
-- the WAL file being written: PostgreSQL 15 names it by the insert
-- timeline, so it is current from the moment a promotion ends), plus a
-- base that only changes when the row was written by another cluster
-- (dump and restore) or, which one lineage never does, a lower timeline.
-- Every promotion starts a timeline higher than any its ancestors wrote
-- on, so a promoted standby that missed the last grants moves the sequence
-- to at least (its timeline + base) << 40, above every token of the old
-- timeline. The move is done once, under the row's lock: a concurrent grant
-- waits for it and then sees the row current. setval is not transactional;
-- if the caller rolls back, the sequence stays moved (tokens only rise) and
-- the next grant moves it again, which is then a no-op. Returns the epoch.
-- Migrate calls it, which moves an existing database's sequence at once.
CREATE OR REPLACE FUNCTION distributed_lock_advance_epoch() RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    tl bigint := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint;
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

-- distributed_lock_next_token draws a token after moving the sequence into
-- this timeline's epoch. distributed_lock_acquire calls it only when the
-- epoch row is not on the server's timeline (a timeline's first grant);
-- every other grant compares the row with the timeline in its own
-- statement and draws with nextval directly, which costs no extra
-- statement, snapshot or function call.
CREATE OR REPLACE FUNCTION distributed_lock_next_token() RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM distributed_lock_advance_epoch();
    RETURN nextval('distributed_lock_fence_seq');
END $$;

-- distributed_lock_acquire makes one attempt to take key for owner, for
-- ttl_us microseconds from the database's clock. It never waits: a row
-- another transaction has locked is not waited for (SKIP LOCKED), the
-- attempt is refused. One row, always:
--   outcome  'acquired' (a new or free row), 'stolen' (another owner's
--            expired lease), 'renewed' (owner already held it: same token,
--            later expiry) when granted; 'held' when another owner's lease
--            runs (remaining says how long); 'queued' when the row is free
--            or lapsed but promised to the waiters queued for it (see
--            distributed_lock_enqueue); 'free', 'expired' or 'busy'
--            when another transaction was changing or creating the key's row
--            at that moment (try again shortly; for 'busy' only lock_key is
--            set).
--   lock_key, owner_id, fence_token, expires_at, ttl: the grant, or the
--            row that refused it.
-- Steals are logged as events; with log_grants every new grant is.
-- event_actor defaults to owner.
--
-- The first statement is the path almost every attempt takes (the key's
-- row exists and is free, or the caller's own): one UPDATE that locks the
-- row SKIP LOCKED and draws the token while it is locked, or, when nothing
-- was taken, returns the row as it found it. "Now" is statement_timestamp():
-- one instant for every column, as fresh as a clock reading because nothing
-- waits. Only a first grant of a key, a steal, or a logged grant run the
-- second statement, whose branches cost CPU even when they do nothing:
--   - it takes the gate, a shared advisory lock that distributed_lock_prune
--     takes exclusively, so deleting rows can never let a key's tokens go
--     backwards (see there);
--   - cur locks the row if the caller may take it: free, expired, or its
--     own; taken updates it, drawing the token under the row lock;
--   - created inserts the row when the key has none, its token drawn under
--     the gate; ON CONFLICT DO NOTHING: a concurrent first grant wins;
--   - logged writes the event in the same statement.
CREATE OR REPLACE FUNCTION distributed_lock_acquire(
    key text, owner text, ttl_us bigint, lease_metadata jsonb DEFAULT NULL,
    event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL, log_grants boolean DEFAULT false)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text, remaining interval)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    waking boolean;
BEGIN
    IF NOT log_grants THEN
        WITH granted AS (
            UPDATE distributed_lock l SET
                owner_id       = owner,
                fence_token    = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.fence_token
                                      WHEN (SELECT e.timeline FROM distributed_lock_epoch e) = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                                      THEN nextval('distributed_lock_fence_seq')
                                      ELSE distributed_lock_next_token() END,
                expires_at     = statement_timestamp() + ttl_us * interval '1 microsecond',
                ttl            = ttl_us * interval '1 microsecond',
                acquired_at    = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.acquired_at ELSE statement_timestamp() END,
                renewed_at     = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN statement_timestamp() END,
                renew_count    = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.renew_count + 1 ELSE 0 END,
                released_at    = NULL,
                grant_kind     = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.grant_kind ELSE 'acquired' END,
                previous_owner = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.previous_owner ELSE l.owner_id END,
                previous_token = CASE WHEN (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > statement_timestamp())
                                      THEN l.previous_token ELSE l.fence_token END,
                metadata       = coalesce(lease_metadata, '{}'),
                handed_to      = NULL
            WHERE l.lock_key = (SELECT x.lock_key FROM distributed_lock x
                                WHERE x.lock_key = key AND (x.released_at IS NOT NULL OR x.owner_id = owner)
                                  AND (x.wake_until IS NULL OR x.wake_until <= statement_timestamp()
                                       OR (x.owner_id = owner AND x.released_at IS NULL))
                                FOR NO KEY UPDATE SKIP LOCKED)
            RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
                      CASE WHEN l.renew_count > 0 THEN 'renewed' ELSE 'acquired' END AS outcome,
                      interval '0' AS remaining
        )
        SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl, g.outcome, g.remaining, false
        FROM granted g
        UNION ALL
        SELECT l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
               CASE WHEN l.released_at IS NOT NULL THEN 'free'
                    WHEN l.expires_at <= statement_timestamp() THEN 'expired' ELSE 'held' END,
               l.expires_at - statement_timestamp(),
               coalesce(l.wake_until > statement_timestamp(), false)
        FROM distributed_lock l
        WHERE l.lock_key = key AND NOT EXISTS (SELECT 1 FROM granted)
        INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining, waking;
        -- A free or lapsed row that someone may wait for (wake_until set):
        -- the queue's if a live waiter is queued, else the second
        -- statement's to grant. The queue is read here, on the refusal
        -- path, not in the statement above (whose plan every grant runs).
        IF FOUND AND waking AND outcome IN ('free', 'expired') THEN
            IF EXISTS (SELECT 1 FROM distributed_lock_waiter w
                       WHERE w.lock_key = key AND w.seen_until > clock_timestamp()) THEN
                outcome := 'queued';
                RETURN NEXT;
                RETURN;
            END IF;
        ELSIF FOUND AND outcome <> 'expired' THEN
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    WITH gate AS MATERIALIZED (
        SELECT pg_advisory_xact_lock_shared('distributed_lock'::regclass::oid::int, 0)
    ), cur AS MATERIALIZED (
        SELECT l.lock_key FROM distributed_lock l
        WHERE l.lock_key = key
          AND (l.released_at IS NOT NULL OR l.owner_id = owner OR l.expires_at <= clock_timestamp())
          AND (l.wake_until IS NULL OR l.wake_until <= clock_timestamp()
               OR (l.owner_id = owner AND l.released_at IS NULL AND l.expires_at > clock_timestamp())
               OR NOT EXISTS (SELECT 1 FROM distributed_lock_waiter w
                              WHERE w.lock_key = key AND w.seen_until > clock_timestamp()))
        FOR NO KEY UPDATE SKIP LOCKED
    ), taken AS (
        UPDATE distributed_lock l SET
            (owner_id, fence_token, expires_at, ttl, acquired_at, renewed_at, renew_count,
             released_at, grant_kind, previous_owner, previous_token, metadata, handed_to) =
            (SELECT owner,
                    CASE WHEN d.mine THEN l.fence_token
                         WHEN (SELECT e.timeline FROM distributed_lock_epoch e) = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                         THEN nextval('distributed_lock_fence_seq')
                         ELSE distributed_lock_next_token() END,
                    d.ts + ttl_us * interval '1 microsecond',
                    ttl_us * interval '1 microsecond',
                    CASE WHEN d.mine THEN l.acquired_at ELSE d.ts END,
                    CASE WHEN d.mine THEN d.ts END,
                    CASE WHEN d.mine THEN l.renew_count + 1 ELSE 0 END,
                    NULL::timestamptz,
                    CASE WHEN d.mine THEN l.grant_kind
                         WHEN l.released_at IS NULL AND l.owner_id <> owner THEN 'stolen'
                         ELSE 'acquired' END,
                    CASE WHEN d.mine THEN l.previous_owner ELSE l.owner_id END,
                    CASE WHEN d.mine THEN l.previous_token ELSE l.fence_token END,
                    coalesce(lease_metadata, '{}'),
                    NULL::bigint
             FROM (SELECT c.ts, (l.owner_id = owner AND l.released_at IS NULL
                                 AND l.expires_at > c.ts) AS mine
                   FROM (SELECT clock_timestamp() AS ts) c) d)
        FROM cur WHERE l.lock_key = cur.lock_key
        RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
                  l.grant_kind, l.previous_owner, l.previous_token
    ), created AS (
        INSERT INTO distributed_lock AS l
            (lock_key, owner_id, fence_token, expires_at, ttl, acquired_at, metadata)
        SELECT key, owner,
               (SELECT CASE WHEN (SELECT e.timeline FROM distributed_lock_epoch e) = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                            THEN nextval('distributed_lock_fence_seq')
                            ELSE distributed_lock_next_token() END FROM gate),
               clock_timestamp() + ttl_us * interval '1 microsecond',
               ttl_us * interval '1 microsecond', clock_timestamp(),
               coalesce(lease_metadata, '{}')
        WHERE NOT EXISTS (SELECT 1 FROM distributed_lock x WHERE x.lock_key = key)
        ON CONFLICT (lock_key) DO NOTHING
        RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, l.renew_count,
                  l.grant_kind, l.previous_owner, l.previous_token
    ), granted AS (
        SELECT * FROM taken UNION ALL SELECT * FROM created
    ), logged AS (
        INSERT INTO distributed_lock_event
            (lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
        SELECT g.lock_key, g.grant_kind, g.owner_id, g.fence_token, coalesce(event_actor, owner),
               g.previous_owner, g.previous_token, coalesce(event_detail, '{}')
        FROM granted g WHERE g.renew_count = 0 AND (g.grant_kind = 'stolen' OR log_grants)
    )
    SELECT g.lock_key, g.owner_id, g.fence_token, g.expires_at, g.ttl,
           CASE WHEN g.renew_count > 0 THEN 'renewed' ELSE g.grant_kind END,
           interval '0'
    FROM granted g
    UNION ALL
    SELECT l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl,
           CASE WHEN (l.released_at IS NOT NULL OR l.expires_at <= statement_timestamp())
                     AND l.wake_until > statement_timestamp()
                     AND EXISTS (SELECT 1 FROM distributed_lock_waiter w
                                 WHERE w.lock_key = key AND w.seen_until > statement_timestamp()) THEN 'queued'
                WHEN l.released_at IS NOT NULL THEN 'free'
                WHEN l.expires_at <= statement_timestamp() THEN 'expired' ELSE 'held' END,
           l.expires_at - statement_timestamp()
    FROM distributed_lock l
    WHERE l.lock_key = key AND NOT EXISTS (SELECT 1 FROM granted)
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, remaining;
    IF NOT FOUND THEN
        -- The key had no row when the statement began, and another
        -- transaction's first grant of it won the insert.
        lock_key := key;
        outcome := 'busy';
    END IF;
    RETURN NEXT;
END $$;

-- distributed_lock_renew extends owner's lease of key, granted with token,
-- by ttl_us from the database's now. One row: outcome 'renewed' with the
-- lease, or 'not_held' (only lock_key set) when that grant is no longer the
-- current, unexpired one. An expired lease is not revived even if nobody
-- took it: its holder may already have been told it was lost.
CREATE OR REPLACE FUNCTION distributed_lock_renew(key text, owner text, token bigint, ttl_us bigint)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    UPDATE distributed_lock l
    SET expires_at = clock_timestamp() + ttl_us * interval '1 microsecond',
        ttl = ttl_us * interval '1 microsecond',
        renewed_at = clock_timestamp(),
        renew_count = l.renew_count + 1
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token
      AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'renewed'
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_held';
    END IF;
    RETURN NEXT;
END $$;

-- distributed_lock_release frees owner's lease of key granted with token,
-- and keeps the row (see distributed_lock_acquire). One row: outcome
-- 'released' with the lease as it was, or 'not_held' (only lock_key set)
-- when that grant is not current or was already released. It sets only
-- released_at, which no index covers, so the update can be HOT.
--
-- When some may wait (wake_until, set by distributed_lock_enqueue and
-- distributed_lock_waiter_watch, read under the row lock, so no waiter is
-- missed) it hands the lease to the head of the key's queue in the same
-- transaction (distributed_lock_hand_off), or, with no live waiter queued,
-- NOTIFYs distributed_lock with the key. Only then: a NOTIFY serialises the
-- commits of every notifying transaction in the cluster, a cost releases
-- nobody waits for should not pay.
--
-- With lazy_commit the transaction commits without waiting for its WAL to
-- reach disk (synchronous_commit off, transaction-local, so it outlives this
-- function): pass it only when the call is a transaction of its own. Safety
-- never rests on a release: one lost in a crash leaves a lease that expires
-- at its TTL, and any grant that saw the release commits durably after it,
-- which flushes the release too (WAL is flushed in order). But a server
-- with synchronous standbys (synchronous_standby_names set, read at each
-- call so a reload takes effect) keeps the session's synchronous_commit:
-- there the release is acknowledged only once a standby has it, so a
-- failover to that standby does not bring the lease back for its TTL; it
-- costs the release a round trip to the standby (docs/operations.md). With log_release
-- a "released" event is written (event_actor, default owner).
CREATE OR REPLACE FUNCTION distributed_lock_release(
    key text, owner text, token bigint, lazy_commit boolean DEFAULT false,
    log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    wake timestamptz;
BEGIN
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token AND l.released_at IS NULL
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'released', l.wake_until
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, wake;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_held';
        RETURN NEXT;
        RETURN;
    END IF;
    IF lazy_commit AND current_setting('synchronous_standby_names') = '' THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF log_release THEN
        INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor)
        VALUES (key, 'released', owner, token, coalesce(event_actor, owner));
    END IF;
    -- Nested, not AND: wake is NULL on a key nobody waited for, and
    -- NULL AND x evaluates x.
    IF wake > clock_timestamp() THEN
        IF distributed_lock_hand_off(key) IS NULL THEN
            PERFORM pg_notify('distributed_lock', key);
        END IF;
    END IF;
    RETURN NEXT;
END $$;

-- distributed_lock_fence proves, inside the caller's transaction, that
-- owner's grant token of key is still the current, unexpired one, and keeps
-- it so until that transaction ends: the row is locked FOR SHARE (row locks
-- belong to the transaction, not to this function), and every take-over
-- must lock the row for update, so no other owner can be granted the key
-- before the caller's guarded writes commit or roll back. Returns whether
-- the grant is current. Call it inside a transaction.
CREATE OR REPLACE FUNCTION distributed_lock_fence(key text, owner text, token bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM distributed_lock l
    WHERE l.lock_key = key AND l.owner_id = owner AND l.fence_token = token
      AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
    FOR SHARE;
    RETURN FOUND;
END $$;

-- distributed_lock_report_stale_write records that a write made with
-- owner's token on key was refused (by the fence or by a resource that
-- checks tokens); detail is a JSON object (e.g. {"resource": "ledger"}).
-- Returns the event's id.
CREATE OR REPLACE FUNCTION distributed_lock_report_stale_write(
    key text, owner text, token bigint, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    id bigint;
BEGIN
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (key, 'stale_write_rejected', owner, token, coalesce(event_actor, owner),
            coalesce(event_detail, '{}'))
    RETURNING event_id INTO id;
    RETURN id;
END $$;

-- Operator actions, on the grant the operator saw: they act only if token
-- is still the current, unreleased grant of key, so a lock that changed
-- hands after the operator looked is left alone. One row: outcome
-- 'force_expired' / 'force_released' with the row after the action, or
-- 'not_held' (only lock_key set). An event records event_actor (default:
-- the role that logged in) and reason. Waiters are woken.
--
-- distributed_lock_force_expire ends the lease now without freeing the row:
-- the next acquirer takes it over as a steal, with a new token.
CREATE OR REPLACE FUNCTION distributed_lock_force_expire(
    key text, token bigint, event_actor text DEFAULT NULL, reason text DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    wake timestamptz;
BEGIN
    UPDATE distributed_lock l SET expires_at = least(l.expires_at, clock_timestamp())
    WHERE l.lock_key = key AND l.fence_token = token AND l.released_at IS NULL
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'force_expired', l.wake_until
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, wake;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_held';
        RETURN NEXT;
        RETURN;
    END IF;
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (key, 'force_expired', owner_id, token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason)));
    IF wake > clock_timestamp() THEN
        PERFORM pg_notify('distributed_lock', key);
    END IF;
    RETURN NEXT;
END $$;

-- distributed_lock_force_release frees the row as if its holder had
-- released it.
CREATE OR REPLACE FUNCTION distributed_lock_force_release(
    key text, token bigint, event_actor text DEFAULT NULL, reason text DEFAULT NULL)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    wake timestamptz;
BEGIN
    UPDATE distributed_lock l SET released_at = clock_timestamp()
    WHERE l.lock_key = key AND l.fence_token = token AND l.released_at IS NULL
    RETURNING l.lock_key, l.owner_id, l.fence_token, l.expires_at, l.ttl, 'force_released', l.wake_until
    INTO lock_key, owner_id, fence_token, expires_at, ttl, outcome, wake;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'not_held';
        RETURN NEXT;
        RETURN;
    END IF;
    INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
    VALUES (key, 'force_released', owner_id, token, coalesce(event_actor, session_user),
            jsonb_strip_nulls(jsonb_build_object('reason', reason)));
    -- Nested, not AND: wake is NULL on a key nobody waited for, and
    -- NULL AND x evaluates x.
    IF wake > clock_timestamp() THEN
        IF distributed_lock_hand_off(key) IS NULL THEN
            PERFORM pg_notify('distributed_lock', key);
        END IF;
    END IF;
    RETURN NEXT;
END $$;

-- distributed_lock_prune deletes lock rows free (released, or expired and
-- never released) for longer than free_for_us, waiter records of processes
-- that died waiting, and, unless events_older_us is NULL, events older
-- than that. One row: how many of each it deleted.
--
-- It first takes the gate exclusively: it waits until no grant is between
-- drawing a token and writing it (they hold the gate shared, see
-- distributed_lock_acquire), and keeps new ones out until the transaction
-- ends. Deleting a key's row is what could let a token go backwards: a grant
-- that drew token t on its insert path would insert t after the key was
-- granted a larger token, released and pruned. With the gate, every grant
-- that drew a token before the delete has finished before it, and every
-- grant after it draws a larger token than any the deleted row had. It waits
-- at most gate_wait_ms (a grant inside a long transaction holds the gate
-- until that ends); past that it fails with SQLSTATE 55P03 and deletes
-- nothing.
CREATE OR REPLACE FUNCTION distributed_lock_prune(
    free_for_us bigint, events_older_us bigint DEFAULT NULL, gate_wait_ms bigint DEFAULT 5000)
RETURNS TABLE (locks bigint, waiters bigint, events bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', gate_wait_ms || 'ms', true);
    PERFORM pg_advisory_xact_lock('distributed_lock'::regclass::oid::int, 0);
    DELETE FROM distributed_lock l
    WHERE (l.released_at IS NOT NULL AND l.released_at < clock_timestamp() - free_for_us * interval '1 microsecond')
       OR (l.released_at IS NULL AND l.expires_at < clock_timestamp() - free_for_us * interval '1 microsecond');
    GET DIAGNOSTICS locks = ROW_COUNT;
    DELETE FROM distributed_lock_waiter w WHERE w.seen_until < clock_timestamp() - interval '1 minute';
    GET DIAGNOSTICS waiters = ROW_COUNT;
    events := 0;
    IF events_older_us IS NOT NULL THEN
        DELETE FROM distributed_lock_event e
        WHERE e.occurred_at < clock_timestamp() - events_older_us * interval '1 microsecond';
        GET DIAGNOSTICS events = ROW_COUNT;
    END IF;
    PERFORM set_config('lock_timeout', caller_lock_timeout, true);
    RETURN NEXT;
END $$;

-- ---------------------------------------------------------------------------
-- The fair queue (locker.Acquire; docs/design.md, "Fair queue"). A key's
-- queue is its live waiter rows (seen_until in the future) in waiter_id
-- order. A waiter enqueues once, with the lease it wants; a release (or a
-- waiter finding the key free or lapsed) hands the lease to the head in
-- its own transaction and NOTIFYs distributed_lock_handoff with everything
-- the waiter needs to hold it. Lock order, everywhere: the key's lock row,
-- then waiter rows.
--
-- Functions from before the queue, which a waiter no longer calls.
DROP FUNCTION IF EXISTS distributed_lock_waiter_add(text, text, bigint);
DROP FUNCTION IF EXISTS distributed_lock_waiter_refresh(bigint, bigint);
DROP FUNCTION IF EXISTS distributed_lock_waiter_remove(bigint);

-- distributed_lock_hand_off grants key, whose row the caller has locked and
-- which is free or lapsed, to the head of its queue: new token (drawn under
-- the row lock), owner, TTL and metadata from the waiter row, which is
-- consumed; the lease first runs only until least(claim_window, ttl) from
-- now, so a waiter that died after its last heartbeat blocks the key that
-- long at most (its client renews it to the full TTL, the claim). The grant
-- is logged as the waiter's own would be ('stolen' always, 'acquired' when
-- the waiter logs grants). It commits durably whatever the caller set: a
-- grant lost in a crash after its NOTIFY went out could see its token drawn
-- again. Returns the waiter's id, or NULL when no live waiter is queued.
-- Internal: only the functions below call it (no EXECUTE for anyone).
CREATE OR REPLACE FUNCTION distributed_lock_hand_off(key text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    ts timestamptz := clock_timestamp();
    w distributed_lock_waiter%ROWTYPE;
    g record;
BEGIN
    SELECT * INTO w FROM distributed_lock_waiter x
    WHERE x.lock_key = key AND x.seen_until > ts AND x.ttl IS NOT NULL
    ORDER BY x.waiter_id LIMIT 1
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    UPDATE distributed_lock l SET
        owner_id = w.owner_id,
        fence_token = CASE WHEN (SELECT e.timeline FROM distributed_lock_epoch e) = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                           THEN nextval('distributed_lock_fence_seq')
                           ELSE distributed_lock_next_token() END,
        expires_at = ts + least(w.claim_window, w.ttl),
        ttl = w.ttl,
        acquired_at = ts,
        renewed_at = NULL,
        renew_count = 0,
        grant_kind = CASE WHEN l.released_at IS NULL THEN 'stolen' ELSE 'acquired' END,
        released_at = NULL,
        previous_owner = l.owner_id,
        previous_token = l.fence_token,
        metadata = coalesce(w.metadata, '{}'),
        handed_to = w.waiter_id
    WHERE l.lock_key = key
    RETURNING l.owner_id, l.fence_token, l.expires_at, l.ttl, l.grant_kind, l.previous_owner, l.previous_token
    INTO g;
    DELETE FROM distributed_lock_waiter x WHERE x.waiter_id = w.waiter_id;
    IF g.grant_kind = 'stolen' OR w.log_grants THEN
        INSERT INTO distributed_lock_event
            (lock_key, kind, owner_id, fence_token, actor, previous_owner, previous_token, detail)
        VALUES (key, g.grant_kind, g.owner_id, g.fence_token, coalesce(w.actor, w.owner_id),
                g.previous_owner, g.previous_token,
                jsonb_build_object('waited_ms', (extract(epoch FROM ts - w.waiting_since) * 1000)::bigint,
                                   'waiter_id', w.waiter_id));
    END IF;
    PERFORM set_config('synchronous_commit', 'on', true);
    -- NOTIFY channels are per database, and a database may hold several
    -- lock schemas: the payload names this one (the pinned search_path's
    -- first schema), whose waiter ids these are.
    PERFORM pg_notify('distributed_lock_handoff', json_build_object(
        'schema', current_schema(), 'key', key, 'waiter', w.waiter_id, 'owner', g.owner_id, 'token', g.fence_token,
        'acquired_us', (extract(epoch FROM ts) * 1000000)::bigint,
        'expires_us', (extract(epoch FROM g.expires_at) * 1000000)::bigint,
        'ttl_us', (extract(epoch FROM g.ttl) * 1000000)::bigint,
        'kind', g.grant_kind)::text);
    RETURN w.waiter_id;
END $$;

-- distributed_lock_enqueue is a waiting acquirer's first and usually only
-- call, one transaction: it grants key to owner (as distributed_lock_acquire
-- would) when owner holds it or it is free or lapsed with no live waiter
-- queued; otherwise it queues owner (a waiter row with the lease it wants:
-- ttl_us, claim_us, lease_metadata, log_grants, event_actor, visible for
-- seen_for_us unless refreshed), keeps releases of the key handing off
-- (wake_until), and returns the holder's row with outcome 'queued' and the
-- waiter's id. A key free or lapsed with live waiters ahead is first handed
-- to the head. It waits for the key's row lock (a release or grant in
-- flight), which orders it with releases: a release either sees the new
-- waiter or has committed before. db_now is the database's clock as the
-- call returns (the client relates a later hand-off's acquired_us to its
-- own clock with it). outcome 'busy': a first grant of the key by another
-- transaction kept failing; try again.
CREATE OR REPLACE FUNCTION distributed_lock_enqueue(
    key text, owner text, ttl_us bigint, claim_us bigint, seen_for_us bigint,
    lease_metadata jsonb DEFAULT NULL, event_actor text DEFAULT NULL, event_detail jsonb DEFAULT NULL,
    log_grants boolean DEFAULT false)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text, remaining interval, waiter_id bigint, db_now timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r record;
    ts timestamptz;
    wid bigint;
    locked boolean := false;
BEGIN
    FOR attempt IN 1..3 LOOP
        SELECT l.owner_id, l.released_at, l.expires_at INTO r
        FROM distributed_lock l WHERE l.lock_key = key FOR NO KEY UPDATE;
        locked := FOUND;
        EXIT WHEN locked;
        -- No row yet: a first grant creates it. When another transaction's
        -- first grant wins the insert, its row exists once that commits.
        RETURN QUERY
            SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining,
                   NULL::bigint, clock_timestamp()
            FROM distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants) a
            WHERE a.outcome IN ('acquired', 'stolen', 'renewed');
        IF FOUND THEN
            RETURN;
        END IF;
    END LOOP;
    IF NOT locked THEN
        lock_key := key;
        outcome := 'busy';
        RETURN NEXT;
        RETURN;
    END IF;
    ts := clock_timestamp();
    IF (r.owner_id = owner AND r.released_at IS NULL AND r.expires_at > ts)
       OR ((r.released_at IS NOT NULL OR r.expires_at <= ts)
           AND NOT EXISTS (SELECT 1 FROM distributed_lock_waiter w
                           WHERE w.lock_key = key AND w.seen_until > ts)) THEN
        -- The row lock is this transaction's, which SKIP LOCKED does not skip.
        RETURN QUERY
            SELECT a.lock_key, a.owner_id, a.fence_token, a.expires_at, a.ttl, a.outcome, a.remaining,
                   NULL::bigint, clock_timestamp()
            FROM distributed_lock_acquire(key, owner, ttl_us, lease_metadata, event_actor, event_detail, log_grants) a;
        RETURN;
    END IF;
    IF r.released_at IS NOT NULL OR r.expires_at <= ts THEN
        PERFORM distributed_lock_hand_off(key);
    END IF;
    INSERT INTO distributed_lock_waiter AS w
        (lock_key, owner_id, seen_until, ttl, claim_window, metadata, log_grants, actor)
    VALUES (key, owner, ts + seen_for_us * interval '1 microsecond', ttl_us * interval '1 microsecond',
            claim_us * interval '1 microsecond', coalesce(lease_metadata, '{}'), log_grants, nullif(event_actor, ''))
    RETURNING w.waiter_id INTO wid;
    PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
    RETURN QUERY
        SELECT l.lock_key::text, l.owner_id::text, l.fence_token::bigint, l.expires_at, l.ttl::interval,
               'queued', l.expires_at - clock_timestamp(), wid, clock_timestamp()
        FROM distributed_lock l WHERE l.lock_key = key;
END $$;

-- distributed_lock_keep_waking keeps releases of key handing off (or
-- NOTIFYing) until well past the seen_until of a waiter refreshed at ts for
-- seen_for_us: wake_until must never run out before a live waiter's record.
-- It writes only when wake_until would run out within seen_for_us, to
-- twice that, so most calls leave the hot row alone. Internal.
CREATE OR REPLACE FUNCTION distributed_lock_keep_waking(key text, ts timestamptz, seen_for_us bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE distributed_lock l SET wake_until = ts + 2 * seen_for_us * interval '1 microsecond'
    WHERE l.lock_key = key
      AND (l.wake_until IS NULL OR l.wake_until < ts + seen_for_us * interval '1 microsecond');
END $$;

-- distributed_lock_waiter_poll is a queued waiter's check, for when it
-- missed or has no NOTIFY: one row as distributed_lock_enqueue's, outcome
--   'acquired' / 'stolen': the key was handed to waiter id (the lease, with
--            remaining = time left of its claim window; waiter_id = id);
--   'queued': still waiting (the holder's row); its record is refreshed for
--            seen_for_us, and a key found free or lapsed is first handed to
--            the head of the queue, which may be this waiter;
--   'gone':   its record is gone and no grant is its (it lapsed, or its
--            claim window ran out unclaimed): enqueue again.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_poll(key text, id bigint, seen_for_us bigint)
RETURNS TABLE (lock_key text, owner_id text, fence_token bigint, expires_at timestamptz,
               ttl interval, outcome text, remaining interval, waiter_id bigint, db_now timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    r record;
    ts timestamptz;
BEGIN
    SELECT l.released_at, l.expires_at, l.handed_to INTO r
    FROM distributed_lock l WHERE l.lock_key = key FOR NO KEY UPDATE;
    ts := clock_timestamp();
    IF FOUND AND r.handed_to IS DISTINCT FROM id THEN
        UPDATE distributed_lock_waiter w SET seen_until = ts + seen_for_us * interval '1 microsecond'
        WHERE w.waiter_id = id AND w.lock_key = key;
        IF FOUND THEN
            IF r.released_at IS NOT NULL OR r.expires_at <= ts THEN
                PERFORM distributed_lock_hand_off(key);
            END IF;
            PERFORM distributed_lock_keep_waking(key, ts, seen_for_us);
        END IF;
    END IF;
    RETURN QUERY
        SELECT l.lock_key::text, l.owner_id::text, l.fence_token::bigint, l.expires_at, l.ttl::interval,
               CASE WHEN l.handed_to = id AND l.released_at IS NULL AND l.expires_at > clock_timestamp()
                    THEN l.grant_kind::text
                    WHEN EXISTS (SELECT 1 FROM distributed_lock_waiter w WHERE w.waiter_id = id) THEN 'queued'
                    ELSE 'gone' END,
               l.expires_at - clock_timestamp(),
               id, clock_timestamp()
        FROM distributed_lock l WHERE l.lock_key = key;
    IF NOT FOUND THEN
        lock_key := key;
        outcome := 'gone';
        RETURN NEXT;
    END IF;
END $$;

-- distributed_lock_waiter_heartbeat keeps the waiter records ids visible for
-- another seen_for_us, in one statement for all the waiters of a process
-- (locker.Notifier), and releases of their keys handing off. Returns the
-- ids it did not find: handed a lease (the waiter may have missed the
-- NOTIFY) or gone.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_heartbeat(ids bigint[], seen_for_us bigint)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    ts timestamptz := clock_timestamp();
    k text;
BEGIN
    -- Lock rows before waiter rows, in key order, as everywhere.
    FOR k IN SELECT DISTINCT w.lock_key FROM distributed_lock_waiter w
             WHERE w.waiter_id = ANY (ids) ORDER BY 1 LOOP
        PERFORM distributed_lock_keep_waking(k, ts, seen_for_us);
    END LOOP;
    RETURN QUERY
        WITH seen AS (
            UPDATE distributed_lock_waiter w SET seen_until = ts + seen_for_us * interval '1 microsecond'
            WHERE w.waiter_id = ANY (ids)
            RETURNING w.waiter_id
        )
        SELECT i FROM unnest(ids) i WHERE i NOT IN (SELECT s.waiter_id FROM seen s);
END $$;

-- distributed_lock_waiter_leave takes waiter id out of key's queue (its
-- Acquire gave up). If the key was handed to it meanwhile and is unclaimed,
-- the lease is released (with log_release, logged as a release by
-- event_actor) and passed on to the next waiter. Returns 'left' (it was
-- queued), 'passed_on' (it had been handed the key), or 'none'.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_leave(
    key text, id bigint, log_release boolean DEFAULT false, event_actor text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r record;
BEGIN
    SELECT l.owner_id, l.fence_token, l.handed_to, l.released_at, l.renew_count INTO r
    FROM distributed_lock l WHERE l.lock_key = key FOR NO KEY UPDATE;
    DELETE FROM distributed_lock_waiter w WHERE w.waiter_id = id AND w.lock_key = key;
    IF FOUND THEN
        RETURN 'left';
    END IF;
    IF r.handed_to = id AND r.released_at IS NULL AND r.renew_count = 0 THEN
        UPDATE distributed_lock l SET released_at = clock_timestamp() WHERE l.lock_key = key;
        IF log_release THEN
            INSERT INTO distributed_lock_event (lock_key, kind, owner_id, fence_token, actor, detail)
            VALUES (key, 'released', r.owner_id, r.fence_token, coalesce(event_actor, r.owner_id),
                    '{"unclaimed": true}');
        END IF;
        IF distributed_lock_hand_off(key) IS NULL THEN
            PERFORM pg_notify('distributed_lock', key);
        END IF;
        RETURN 'passed_on';
    END IF;
    RETURN 'none';
END $$;

-- distributed_lock_waiter_watch asks releases of key to NOTIFY
-- distributed_lock (or hand off to a queued waiter) for at least the next
-- seen_for_us/2, for a client that waits without queueing (it retries
-- distributed_lock_acquire on each NOTIFY). It is keep_waking for a waiter
-- seen now for seen_for_us/2, which writes only when the row's wake_until
-- would run out sooner, so waiters that refresh together do not all rewrite
-- the row.
CREATE OR REPLACE FUNCTION distributed_lock_waiter_watch(key text, seen_for_us bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM distributed_lock_keep_waking(key, clock_timestamp(), seen_for_us / 2);
END $$;

-- Nobody may call the protocol functions until granted (lockctl grant):
-- PostgreSQL gives EXECUTE to PUBLIC on every new function.
REVOKE ALL ON FUNCTION
    distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean),
    distributed_lock_renew(text, text, bigint, bigint),
    distributed_lock_release(text, text, bigint, boolean, boolean, text),
    distributed_lock_fence(text, text, bigint),
    distributed_lock_report_stale_write(text, text, bigint, text, jsonb),
    distributed_lock_force_expire(text, bigint, text, text),
    distributed_lock_force_release(text, bigint, text, text),
    distributed_lock_prune(bigint, bigint, bigint),
    distributed_lock_hand_off(text),
    distributed_lock_keep_waking(text, timestamptz, bigint),
    distributed_lock_enqueue(text, text, bigint, bigint, bigint, jsonb, text, jsonb, boolean),
    distributed_lock_waiter_poll(text, bigint, bigint),
    distributed_lock_waiter_heartbeat(bigint[], bigint),
    distributed_lock_waiter_leave(text, bigint, boolean, text),
    distributed_lock_waiter_watch(text, bigint),
    distributed_lock_advance_epoch(),
    distributed_lock_next_token()
FROM PUBLIC;

-- Move an existing database's tokens into the epoch now (a no-op when
-- they are there), rather than at its first grant.
SELECT distributed_lock_advance_epoch();
