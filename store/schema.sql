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
-- those writes a non-HOT update that inserts into every index (measured
-- at 8 workers: 7.3k cycles/s with three such indexes, 9.3k without; see
-- BENCHMARKS.md). The console's orders other than by key read the table
-- with a bounded top-N sort instead, once per refresh while the selection
-- stays put (store.ListLocks, store.Span). Earlier versions created these
-- three; an operator who wants index-backed console sorts on millions of
-- locks can create them under other names (README, "Large tables"), which
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
CREATE INDEX IF NOT EXISTS distributed_lock_waiter_key_idx ON distributed_lock_waiter (lock_key, waiting_since);

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
