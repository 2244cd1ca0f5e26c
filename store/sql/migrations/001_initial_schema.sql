-- lockctl's tables, as the first release makes them. Objects are created
-- unqualified, in the first schema of search_path, so a database can hold
-- several independent lock namespaces (one per schema).

-- Which migrations this schema has had (store.Migrate, schema.sql): one row
-- per version, written in the transaction that applied it, with the
-- SHA-256 of the text that applied it, so a schema made by another build
-- of a migration is refused before anything runs on it
-- (store/migrate_checksum.go). applied_at is that transaction's start on
-- the server's wall clock, not lock time: it is written before the
-- protocol's clock (distributed_lock_now) exists, and a test that moves
-- that clock does not move when its schema was made.
CREATE TABLE distributed_lock_migration (
    version    integer     PRIMARY KEY,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Fencing tokens. One sequence for every key, so tokens are unique across
-- keys; CACHE 1 so tokens are handed out in the order they are drawn (a
-- per-backend cache would let a later grant get a smaller number); NO CYCLE
-- so it stops rather than wraps.
CREATE SEQUENCE distributed_lock_fence_seq
    AS bigint MINVALUE 1 START WITH 1 INCREMENT BY 1 CACHE 1 NO CYCLE;

-- The token epoch (distributed_lock_advance_epoch): the one row says for
-- which cluster (pg_control_system's system_identifier) and WAL timeline the
-- sequence was last moved, and the base added to the timeline to make the
-- epoch. Tokens drawn on epoch e are at least e << 40. The first row (no
-- cluster, timeline 0) makes the first migrate move the sequence.
CREATE TABLE distributed_lock_epoch (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    system_id bigint,
    timeline  bigint NOT NULL,
    base      bigint NOT NULL
);
INSERT INTO distributed_lock_epoch (timeline, base) VALUES (0, 0);

-- The prune gate (distributed_lock_prune): a key's first grant locks this
-- table ROW EXCLUSIVE while it draws and writes its token, prune locks it
-- SHARE ROW EXCLUSIVE while it deletes. It holds nothing and nobody is
-- granted anything on it: LOCK TABLE asks for a privilege before it locks,
-- and what any role may take without one (ACCESS SHARE, which a size
-- function takes by the table's oid; ROW EXCLUSIVE while a statement
-- naming it is planned, by a role with USAGE on the schema) never holds a
-- first grant back. An advisory lock would be anyone's to hold.
CREATE TABLE distributed_lock_prune_gate ();

-- Value rules, as domains rather than table CHECK constraints: PostgreSQL
-- parses and plans a table's CHECK constraints again on every INSERT or
-- UPDATE statement (about a fifth of a grant's server CPU with eight of
-- them), while a domain's rules are parsed once per session and cached.
-- Same bounds as locker.ValidateKey / locker.ValidateOwner. A column only
-- the protocol computes (the mode a grant writes, a grant's kind, a token
-- drawn from the sequence) has no domain: no caller's value reaches it, and
-- every domain a write assigns is checked anew at each execution (three
-- such checks were 3% of an uncontended cycle's backend instructions).
CREATE DOMAIN distributed_lock_name AS text CHECK (octet_length(VALUE) BETWEEN 1 AND 255);
-- A lease's length (and a hand-off's claim window, and how long a waiter's
-- record lives unseen): a millisecond to a year, as locker.MaxTTL and the
-- CLI bound it. The protocol turns a caller's microseconds into an
-- interval with distributed_lock_us (02_rules.sql), which never overflows,
-- so a length out of range is refused here, by name.
CREATE DOMAIN distributed_lock_ttl AS interval CHECK (VALUE BETWEEN interval '1 millisecond' AND interval '365 days');
-- A lease's lock-delay (locker.Config.LockDelay): at most a minute, as
-- Consul caps its own, so a key left by a dead holder is idle a bounded time.
CREATE DOMAIN distributed_lock_delay AS interval CHECK (VALUE BETWEEN interval '0' AND interval '60 seconds');
-- How a key is held (11_shared.sql): by one owner, by any number of shared
-- holders, or by at most permits holders of a semaphore.
CREATE DOMAIN distributed_lock_mode AS text CHECK (VALUE IN ('exclusive', 'shared', 'semaphore'));
CREATE DOMAIN distributed_lock_permits AS integer CHECK (VALUE BETWEEN 1 AND 1000);
-- JSON a caller hands the protocol, a lease's metadata or an event's
-- detail (an operator's reason is kept there): at most 8 KiB as PostgreSQL
-- stores it (locker.MaxJSONBytes checks the JSON text before it is sent),
-- so what a reader of the lock tables fetches stays small.
CREATE DOMAIN distributed_lock_json AS jsonb CHECK (pg_column_size(VALUE) <= 8192);
CREATE DOMAIN distributed_lock_metadata AS distributed_lock_json CHECK (jsonb_typeof(VALUE) = 'object');
-- A session's host name, as a process reports it.
CREATE DOMAIN distributed_lock_host AS text CHECK (octet_length(VALUE) <= 255);
-- A process's wake-up channel (locker.Notifier; docs/queue.md): a lower-case
-- identifier within NAMEDATALEN (63 bytes), so that LISTEN, quoted or not,
-- and pg_notify name the same channel, and pg_notify never refuses it.
CREATE DOMAIN distributed_lock_channel AS text CHECK (VALUE ~ '^[a-z_][a-z0-9_]{0,62}$');
CREATE DOMAIN distributed_lock_event_kind AS text CHECK (VALUE IN (
    'acquired', 'stolen', 'released', 'force_expired', 'force_released', 'stale_write_rejected',
    'delay_ended', 'deadlock_refused', 'session_ended', 'permits_changed', 'gave_up', 'revoked',
    'downgraded', 'upgraded'));

-- The rows of the two calls of every lock cycle, distributed_lock_acquire
-- and distributed_lock_release (docs/protocol.md), as named row types
-- rather than OUT parameters: PostgreSQL builds an OUT-parameter
-- function's row description from pg_proc at each call, twice (once for
-- the caller's scan, once for the function's result), where a named
-- type's is read from its cache; about a twelfth of a cycle's backend
-- instructions.
CREATE TYPE distributed_lock_acquire_result AS (
    lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
    outcome text, remaining interval, queue_length integer, delay_until timestamptz);
CREATE TYPE distributed_lock_release_result AS (
    lock_key text, owner_id text, fence_token bigint, expires_at timestamptz, ttl interval,
    outcome text);

-- The leases, one row each, keyed by key and slot. Slot 0 is the key's
-- row: the key's mode and capacity (lock_mode, permits), its queue promise
-- (wake_until), its lock-delay, and one lease: the exclusive holder's or,
-- while a shared or semaphore group runs, the group's own (owner '*', its
-- own token, expiring only when the group ends: 11_shared.sql). Slots 1..
-- are the leases of a running group's holders, each with the same lease
-- columns (its lock_mode the mode of that lease). Every rule about a key
-- reads its slot 0 alone, so an exclusive grant, a set, prune and the queue
-- never read the other slots, and an exclusive cycle touches one row
-- (docs/design.md, "The model"). A released lease keeps its row
-- (released_at set) so the next grant of it always updates a locked row and
-- draws its token there; `lockctl prune` deletes keys that stayed free past
-- a retention, with their slots.
--
-- Column order is for the WAL: an update on the same page logs only the
-- bytes between the longest unchanged prefix and suffix of the row. A grant
-- changes the block previous_token … expires_at (and the owners when the
-- key changes hands), a renewal expires_at … renewed_at, a release
-- released_at alone; what a grant rarely changes comes first.
-- fillfactor 80 leaves room on each page, so grants, renewals and releases
-- are HOT updates: a heap write with no index writes.
CREATE TABLE distributed_lock (
    lock_key       distributed_lock_name       NOT NULL,
    slot           integer                     NOT NULL DEFAULT 0, -- 0: the key's row; 1..: a holder of its group
    lock_mode      text                        NOT NULL DEFAULT 'exclusive', -- the key's mode (slot 0), or the holder's lease's
    permits        distributed_lock_permits,             -- a semaphore's N (slot 0), kept while the key is free
    ttl            distributed_lock_ttl        NOT NULL, -- lease length of the last grant or renewal
    lock_delay     distributed_lock_delay      NOT NULL DEFAULT '0', -- the grant's lock-delay (02_rules.sql)
    metadata       distributed_lock_metadata   NOT NULL DEFAULT '{}',
    grant_kind     text                        NOT NULL DEFAULT 'acquired', -- 'acquired' or 'stolen'
    owner_id       distributed_lock_name       NOT NULL, -- holder, or last holder when free
    owner_role     text NOT NULL DEFAULT session_user,   -- the database role that took the lease: only it acts on it
    previous_owner text,
    previous_token bigint,
    fence_token    bigint                      NOT NULL,
    acquired_at    timestamptz                 NOT NULL, -- start of the current grant
    expires_at     timestamptz                 NOT NULL, -- database clock
    renew_count    integer                     NOT NULL DEFAULT 0,
    renewed_at     timestamptz,
    released_at    timestamptz,                          -- set: the lease ended (expires_at is then the old lease's)
    delay_until    timestamptz,                          -- a force-release's lock-delay ends then (02_rules.sql), or a hold's at-least point
    kept_until     timestamptz,                          -- the at-least point of a hold that asked for one (17_at_least.sql)
    handed_to      bigint,                               -- the waiter a hand-off granted it to
    wake_until     timestamptz,                          -- (slot 0) someone may wait for the key until then: a release hands off or NOTIFYs
    PRIMARY KEY (lock_key, slot)
) WITH (fillfactor = 80);
-- The primary key is the table's only index, on purpose: every grant,
-- renewal and release changes owner_id, fence_token, expires_at,
-- acquired_at or released_at, and an index on any of them makes each of
-- those writes a non-HOT update that inserts into every index (what that
-- costs: BENCHMARKS.md). The console's orders other than by key read the
-- table with a bounded top-N sort instead, once per refresh while the
-- selection stays put (lockview.ListLocks, lockview.Span). An operator who
-- wants index-backed console sorts on millions of locks can create them
-- (docs/operations.md, "Large tables").

-- Append-only history: grants, steals, releases, operator actions,
-- rejected stale writes, waits refused as deadlocks and waits given up.
-- Renewals are not logged (they are counted in
-- distributed_lock.renew_count) so keepalive traffic stays cheap.
CREATE TABLE distributed_lock_event (
    event_id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at    timestamptz NOT NULL, -- the writing call's now (distributed_lock_now)
    lock_key       text        NOT NULL,
    kind           distributed_lock_event_kind NOT NULL,
    owner_id       distributed_lock_name,
    fence_token    bigint,
    actor          distributed_lock_name NOT NULL, -- who the caller says it is (a claim)
    -- The database role whose call wrote the event (the session_user of the
    -- protocol function, which no caller passes in), beside actor.
    caller_role    text        NOT NULL DEFAULT session_user,
    previous_owner text,
    previous_token bigint,
    detail         distributed_lock_json NOT NULL DEFAULT '{}'
);
CREATE INDEX distributed_lock_event_key_idx ON distributed_lock_event (lock_key, event_id DESC);
-- Time ranges (the console's rates, prune): events are appended in time
-- order, so a BRIN index answers them at almost no cost per insert.
CREATE INDEX distributed_lock_event_time_brin ON distributed_lock_event USING brin (occurred_at);

-- History is not rewritten: updates are refused (old events may be deleted
-- by `lockctl prune --events-older`).
CREATE FUNCTION distributed_lock_event_immutable() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'distributed_lock_event is append-only';
END $$;
CREATE TRIGGER distributed_lock_event_no_update BEFORE UPDATE ON distributed_lock_event
    FOR EACH ROW EXECUTE FUNCTION distributed_lock_event_immutable();

-- Acquirers waiting in a key's queue (locker.Acquire; the functions of
-- queue.sql). A waiter refreshes seen_until while it waits; a row whose
-- seen_until has passed belongs to a waiter that died and is ignored. The
-- row carries the lease its waiter asked for, so a release can grant it in
-- the same transaction; the lease's domains refuse, at enqueue, a lease no
-- hand-off could write.
CREATE TABLE distributed_lock_waiter (
    waiter_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lock_key      distributed_lock_name NOT NULL,
    owner_id      distributed_lock_name NOT NULL,
    owner_role    text NOT NULL DEFAULT session_user, -- the role that queued it: only it polls, refreshes or removes it
    waiting_since timestamptz NOT NULL,      -- the enqueue's now (distributed_lock_now)
    seen_until    timestamptz NOT NULL,
    ttl           distributed_lock_ttl,      -- lease length the waiter asked for
    claim_window  distributed_lock_ttl,      -- first lease of a hand-off: least(claim_window, ttl)
    lock_delay    distributed_lock_delay NOT NULL DEFAULT '0', -- the lock-delay of the lease it asked for
    metadata      distributed_lock_metadata,
    log_grants    boolean NOT NULL DEFAULT false,
    actor         distributed_lock_name,
    group_id      bigint,                    -- a multi-key acquire's records share it (08_multi.sql); NULL: one key
    lock_mode     distributed_lock_mode,     -- 'shared'/'semaphore': it waits for a holder's lease (12_shared_queue.sql); NULL: exclusive
    permits       distributed_lock_permits,  -- the semaphore's permits it asked for
    wake_channel  distributed_lock_channel,  -- where its process LISTENs for its hand-off; NULL: distributed_lock_handoff, shared
    upgrade_from  bigint                     -- an upgrade's: the token of its owner's shared lease or permit on the key, which ends when the key is granted to it (17_convert.sql)
);
-- The queue of a key is its waiter rows in waiter_id order (drawn at
-- arrival); a hand-off reads its head by this index, and every other read
-- of one key's waiters uses it too.
CREATE INDEX distributed_lock_waiter_queue_idx ON distributed_lock_waiter (lock_key, waiter_id);
-- An owner's waits: the deadlock search (09_deadlock.sql) walks from a
-- holder to the keys it waits for, and the lock table has no index but its
-- key, so this is how it finds them without a scan.
CREATE INDEX distributed_lock_waiter_owner_idx ON distributed_lock_waiter (owner_id);
-- A multi-key acquire's records, found from any one of them (a hand-off).
CREATE INDEX distributed_lock_waiter_group_idx ON distributed_lock_waiter (group_id) WHERE group_id IS NOT NULL;

-- Sessions (10_session.sql): a process's one heartbeat for many leases. A
-- session lives until expires_at; each heartbeat moves expires_at to ttl
-- from the database's now, and every lease bound to it along. A session
-- whose expires_at passed is lapsed for good: nothing revives it, and its
-- leases lapsed at the same instant. Rows of lapsed sessions are deleted by
-- distributed_lock_prune.
CREATE TABLE distributed_lock_session (
    session_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id   distributed_lock_name     NOT NULL, -- who opened it; its heartbeat names it
    owner_role text NOT NULL DEFAULT session_user, -- the role that opened it: only it heartbeats, binds or closes it
    host       distributed_lock_host     NOT NULL DEFAULT '',
    pid        integer                   NOT NULL DEFAULT 0,
    metadata   distributed_lock_metadata NOT NULL DEFAULT '{}',
    ttl        distributed_lock_ttl      NOT NULL,
    opened_at  timestamptz               NOT NULL,
    renewed_at timestamptz,
    expires_at timestamptz               NOT NULL -- database clock
);

-- Which grants a session keeps: one row per bound lease, named by key and
-- token, so a binding can only ever extend the grant it was made for (a
-- later grant of the key has another token). A binding whose lease ended
-- (released, expired, stolen, forced) is dropped by the session's next
-- heartbeat; the lock table itself carries no session, so a grant,
-- renewal or release of a key never writes here.
CREATE TABLE distributed_lock_session_lease (
    lock_key    distributed_lock_name NOT NULL,
    fence_token bigint                NOT NULL,
    session_id  bigint                NOT NULL REFERENCES distributed_lock_session ON DELETE CASCADE,
    PRIMARY KEY (lock_key, fence_token)
);
CREATE INDEX distributed_lock_session_lease_session_idx ON distributed_lock_session_lease (session_id);

-- Revokes (16_revoke.sql): an operator's request that the holder of one
-- grant, named by key and token, let go. The holder's renewals read it
-- (distributed_lock_renew); with force_at, no renewal extends the
-- lease past it, so the lease lapses by itself then if its holder has not
-- released it. At most one row per key: a revoke deletes the key's rows of
-- older grants.
CREATE TABLE distributed_lock_revoke (
    lock_key     distributed_lock_name NOT NULL,
    fence_token  bigint                NOT NULL,
    requested_at timestamptz           NOT NULL, -- the revoke's now (distributed_lock_now)
    force_at     timestamptz,                    -- the lease ends by then; NULL: it is only asked
    reason       text,
    actor        distributed_lock_name NOT NULL, -- who the operator says it is (a claim)
    caller_role  text                  NOT NULL DEFAULT session_user,
    PRIMARY KEY (lock_key, fence_token)
);
