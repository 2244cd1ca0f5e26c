-- Every function above that pins a path (SET search_path FROM CURRENT) is
-- pinned again, now that it exists, to pg_catalog first, then the lock
-- schema, then pg_temp (00_search_path.sql says why it was created under
-- another). Only lockctl's functions: a lock schema may hold others the
-- migrating role owns, and their settings are not lockctl's to change. The
-- rest of the transaction runs under the new path too.
DO $$
DECLARE
    lock_schema name := pg_catalog.current_schema();
    fn regprocedure;
BEGIN
    PERFORM pg_catalog.set_config('search_path',
        'pg_catalog, ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(lock_schema) OPERATOR(pg_catalog.||) ', pg_temp',
        true);
    FOR fn IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname = lock_schema AND p.proname LIKE 'distributed\_lock\_%'
                AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path FROM CURRENT', fn);
    END LOOP;
END $$;
