-- The keep-row upsert's table (internal/bench/upsert.go): ShedLock's
-- PostgreSQL table plus the token column and its sequence.
CREATE TABLE upsert_lock (
    name        varchar(64)  PRIMARY KEY,
    lock_until  timestamp    NOT NULL,
    locked_at   timestamp    NOT NULL,
    locked_by   varchar(255) NOT NULL,
    fence_token bigint       NOT NULL
);
CREATE SEQUENCE upsert_lock_seq;
