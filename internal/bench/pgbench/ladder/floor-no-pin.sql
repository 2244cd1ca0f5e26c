-- What the function floor pays for (BENCHMARKS.md): its two functions
-- without SET search_path, run under the caller's path. Unsafe for a
-- SECURITY DEFINER function (a caller's objects could stand in for the
-- lock tables); throwaway databases only, after floor-functions.sql.
ALTER FUNCTION bench_fn_take(text, text, bigint) RESET search_path;
ALTER FUNCTION bench_fn_release(text, text, bigint) RESET search_path;
