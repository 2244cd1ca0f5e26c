-- A ladder step (BENCHMARKS.md, "Where a cycle's time goes"): the lock
-- table's columns as their base types, without the domains that check
-- them. Throwaway databases only. The readers' view, which no cycle reads,
-- goes first: a column a view reads keeps its type.
DROP VIEW distributed_lock_state;
ALTER TABLE distributed_lock ALTER lock_key TYPE text, ALTER lock_mode TYPE text, ALTER permits TYPE integer,
    ALTER ttl TYPE interval, ALTER lock_delay TYPE interval, ALTER metadata TYPE jsonb,
    ALTER grant_kind TYPE text, ALTER owner_id TYPE text, ALTER fence_token TYPE bigint;
