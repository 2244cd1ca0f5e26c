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

-- One row per key. A released lock keeps its row (released_at set) so the
-- next grant on the key always updates a locked row and draws its token
-- there; `lockctl prune` deletes rows that stayed free past a retention.
CREATE TABLE IF NOT EXISTS distributed_lock (
    lock_key       text        PRIMARY KEY,
    owner_id       text        NOT NULL,          -- holder, or last holder when free
    fence_token    bigint      NOT NULL,
    expires_at     timestamptz NOT NULL,          -- database clock
    ttl            interval    NOT NULL,          -- lease length of the last grant or renewal
    acquired_at    timestamptz NOT NULL,          -- start of the current grant
    renewed_at     timestamptz,
    renew_count    integer     NOT NULL DEFAULT 0,
    released_at    timestamptz,                   -- set: the lock is free (expires_at is then the old lease's)
    grant_kind     text        NOT NULL DEFAULT 'acquired',
    previous_owner text,
    previous_token bigint,
    metadata       jsonb       NOT NULL DEFAULT '{}',
    -- Same bounds as locker.ValidateKey / locker.ValidateOwner.
    CONSTRAINT distributed_lock_key_length   CHECK (octet_length(lock_key) BETWEEN 1 AND 255),
    CONSTRAINT distributed_lock_owner_length CHECK (octet_length(owner_id) BETWEEN 1 AND 255),
    CONSTRAINT distributed_lock_token_positive CHECK (fence_token > 0),
    CONSTRAINT distributed_lock_ttl_positive CHECK (ttl > interval '0'),
    CONSTRAINT distributed_lock_grant_kind   CHECK (grant_kind IN ('acquired', 'stolen')),
    CONSTRAINT distributed_lock_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
) WITH (fillfactor = 80);
-- Room on each page lets a release (which changes no indexed column) be a
-- HOT update: a heap write with no index writes. For tables made before.
ALTER TABLE distributed_lock SET (fillfactor = 80);

-- The console's sort orders, each read as a window through an index.
CREATE INDEX IF NOT EXISTS distributed_lock_expires_idx  ON distributed_lock (expires_at, lock_key);
CREATE INDEX IF NOT EXISTS distributed_lock_token_idx    ON distributed_lock (fence_token);
CREATE INDEX IF NOT EXISTS distributed_lock_acquired_idx ON distributed_lock (acquired_at, lock_key);
-- No index on released_at: a release must change no indexed column to stay a
-- HOT update, and prune, which is rare, can afford a sequential scan.
DROP INDEX IF EXISTS distributed_lock_released_idx;

-- Append-only history: grants, steals, releases, operator actions and
-- rejected stale writes. Renewals are not logged (they are counted in
-- distributed_lock.renew_count) so keepalive traffic stays cheap.
CREATE TABLE IF NOT EXISTS distributed_lock_event (
    event_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    lock_key       text        NOT NULL,
    kind           text        NOT NULL,
    owner_id       text,
    fence_token    bigint,
    actor          text        NOT NULL,
    previous_owner text,
    previous_token bigint,
    detail         jsonb       NOT NULL DEFAULT '{}',
    CONSTRAINT distributed_lock_event_kind CHECK (kind IN (
        'acquired', 'stolen', 'released', 'force_expired', 'force_released',
        'stale_write_rejected')),
    CONSTRAINT distributed_lock_event_actor_length CHECK (octet_length(actor) BETWEEN 1 AND 255)
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
    lock_key      text        NOT NULL,
    owner_id      text        NOT NULL,
    waiting_since timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_until    timestamptz NOT NULL,
    CONSTRAINT distributed_lock_waiter_key_length   CHECK (octet_length(lock_key) BETWEEN 1 AND 255),
    CONSTRAINT distributed_lock_waiter_owner_length CHECK (octet_length(owner_id) BETWEEN 1 AND 255)
);
CREATE INDEX IF NOT EXISTS distributed_lock_waiter_key_idx ON distributed_lock_waiter (lock_key, waiting_since);

-- Whether anyone waits on a key, read with a fresh snapshot: a plain
-- subquery would use the statement's snapshot, taken before the statement
-- waited for the lock row, and miss a waiter that registered meanwhile.
-- VOLATILE is what gives each call its own snapshot. PL/pgSQL, not SQL: a
-- non-inlined SQL function is parsed and planned again on every call, which
-- cost a quarter of a release's server CPU; PL/pgSQL caches the plan.
CREATE OR REPLACE FUNCTION distributed_lock_has_waiters(key text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM distributed_lock_waiter w
                   WHERE w.lock_key = key AND w.seen_until > clock_timestamp());
END $$;
