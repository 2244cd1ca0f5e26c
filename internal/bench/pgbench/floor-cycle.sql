-- One cycle of the function floor (floor-functions.sql), on keys of each
-- client's own.
\set k random(1, 200)
SELECT bench_fn_take('k' || :client_id || '-' || :k, 'o' || :client_id, 30000000::bigint) AS tok \gset
SELECT bench_fn_release('k' || :client_id || '-' || :k, 'o' || :client_id, :tok);
