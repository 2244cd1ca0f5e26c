-- Nobody may call the functions until granted (lockctl grant): PostgreSQL
-- gives EXECUTE to PUBLIC on every new function. The internal ones and the
-- rules are granted to nobody; the protocol functions run them as their
-- owner.
REVOKE ALL ON FUNCTION
    distributed_lock_acquire(text, text, bigint, jsonb, text, jsonb, boolean, bigint),
    distributed_lock_first_grant(text, text, bigint, jsonb, bigint),
    distributed_lock_renew(text, text, bigint, bigint),
    distributed_lock_release(text, text, bigint, boolean, boolean, text),
    distributed_lock_pass_on(text, timestamptz),
    distributed_lock_fence(text, text, bigint),
    distributed_lock_report_stale_write(text, text, bigint, text, jsonb),
    distributed_lock_force_expire(text, bigint, text, text),
    distributed_lock_force_release(text, bigint, text, text),
    distributed_lock_end_delay(text, text, text),
    distributed_lock_prune(bigint, bigint, bigint),
    distributed_lock_hand_off(text, timestamptz),
    distributed_lock_keep_waking(text, timestamptz, bigint),
    distributed_lock_enqueue(text, text, bigint, bigint, bigint, jsonb, text, jsonb, boolean, bigint),
    distributed_lock_waiter_poll(text, bigint, bigint),
    distributed_lock_waiter_heartbeat(bigint[], bigint),
    distributed_lock_waiter_leave(text, bigint, boolean, text),
    distributed_lock_grant_waiter(distributed_lock_waiter, timestamptz),
    distributed_lock_key_set(text[]),
    distributed_lock_acquire_all(text[], text, bigint, jsonb, text, jsonb, boolean, bigint),
    distributed_lock_grant_set(text[], text, bigint, jsonb, text, jsonb, boolean, bigint),
    distributed_lock_create_free(text, text, bigint),
    distributed_lock_lock_set(text[], text, bigint),
    distributed_lock_enqueue_all(text[], text, bigint, bigint, bigint, jsonb, text, jsonb, boolean, bigint),
    distributed_lock_hand_off_group(text, distributed_lock_waiter, timestamptz),
    distributed_lock_set_handed(text[], bigint[], timestamptz),
    distributed_lock_waiter_poll_all(text[], bigint[], bigint),
    distributed_lock_waiter_leave_all(text[], bigint[], boolean, text),
    distributed_lock_renew_all(text[], text, bigint[], bigint),
    distributed_lock_release_all(text[], text, bigint[], boolean, boolean, text),
    distributed_lock_wait_cycle(text, timestamptz),
    distributed_lock_refuse_deadlock(text, bigint[], timestamptz),
    distributed_lock_timeline(),
    distributed_lock_advance_epoch(),
    distributed_lock_next_token(),
    distributed_lock_draw_token(bigint),
    distributed_lock_held(distributed_lock, text, timestamptz),
    distributed_lock_open(distributed_lock, timestamptz),
    distributed_lock_queue_live(text, timestamptz),
    distributed_lock_queue_length(text, timestamptz),
    distributed_lock_queue_position(text, bigint, timestamptz),
    distributed_lock_promised(distributed_lock, timestamptz),
    distributed_lock_delay_end(distributed_lock),
    distributed_lock_delayed(distributed_lock, timestamptz),
    distributed_lock_may_grant(distributed_lock, timestamptz),
    distributed_lock_may_take(distributed_lock, text, timestamptz),
    distributed_lock_refusal(distributed_lock, timestamptz),
    distributed_lock_grant_kind(distributed_lock, text),
    distributed_lock_event_immutable()
FROM PUBLIC;

-- Move the database's tokens into the server's epoch now (a no-op when they
-- are there), rather than at its first grant.
SELECT distributed_lock_advance_epoch();
