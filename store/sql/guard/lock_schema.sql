-- Nothing another role makes may run inside the protocol. The protocol
-- functions run as the owner of the lock tables and find lockctl's tables,
-- types and functions in the lock schema by name (00_search_path.sql): a
-- function or operator made there on lockctl's own types, by a role that
-- cannot already act as that owner, would be picked by name and run as the
-- owner. So migrate (each of its transactions), schema.sql and lockctl grant
-- first refuse (LKA03) a lock schema in which such a role may create
-- objects (its owner, for pg_database_owner the database's owner, or a role
-- granted CREATE, PUBLIC included), and functions or operators there that
-- such a role owns (made while it could), naming each with what to run.
-- The lock tables' owner is the role that migrated them; before the first
-- migration, the role migrating now. Superusers and members of the owner
-- may act as the owner anyway.
--
-- It runs on the caller's path, before the functions pin theirs, so it
-- searches pg_catalog alone, and gives the caller's path back.
DO $$
DECLARE
    lock_schema pg_catalog.name := pg_catalog.current_schema();
    caller_path pg_catalog.text := pg_catalog.current_setting('search_path');
    s pg_catalog.pg_namespace;
    lock_owner pg_catalog.oid;
    problems pg_catalog.text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    SELECT * INTO s FROM pg_namespace n WHERE n.nspname = lock_schema;
    IF NOT FOUND THEN
        -- No schema to create in: the migration says so.
        PERFORM set_config('search_path', caller_path, true);
        RETURN;
    END IF;
    lock_owner := coalesce((SELECT c.relowner FROM pg_class c WHERE c.relnamespace = s.oid AND c.relname = 'distributed_lock'),
                           (SELECT r.oid FROM pg_roles r WHERE r.rolname = CURRENT_USER));
    WITH creator AS (
        SELECT CASE WHEN s.nspowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = 'pg_database_owner')
                    THEN d.datdba ELSE s.nspowner END AS role, NULL::oid AS grantee
        FROM pg_database d WHERE d.datname = current_database()
        UNION ALL
        SELECT a.grantee, a.grantee FROM aclexplode(coalesce(s.nspacl, acldefault('n', s.nspowner))) a
        WHERE a.privilege_type = 'CREATE' AND a.grantee <> s.nspowner
    ), made AS (
        -- Operators first: each needs its function, to be dropped after it.
        SELECT 1 AS rank, 'pg_operator'::regclass AS classid, o.oid, o.oprowner AS owner
        FROM pg_operator o WHERE o.oprnamespace = s.oid
        UNION ALL
        SELECT 2, 'pg_proc'::regclass, p.oid, p.proowner FROM pg_proc p WHERE p.pronamespace = s.oid
    )
    SELECT string_agg(x.problem, '; ' ORDER BY x.rank, x.problem) INTO problems
    FROM (SELECT 0 AS rank, CASE WHEN c.grantee IS NULL
                      THEN format('%I may create objects in schema %I as its owner (run, as a superuser: ALTER SCHEMA %I OWNER TO %I)',
                                  pg_get_userbyid(c.role), s.nspname, s.nspname, pg_get_userbyid(lock_owner))
                      ELSE format('%1$s may create objects in schema %2$I (run: REVOKE CREATE ON SCHEMA %2$I FROM %1$s)',
                                  CASE WHEN c.role = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(c.role)) END,
                                  s.nspname) END AS problem
          FROM creator c WHERE c.role = 0 OR NOT pg_has_role(c.role, lock_owner, 'MEMBER')
          UNION ALL
          SELECT m.rank, format('%s %s is owned by %I (run: DROP %s %s)', i.type, i.identity, pg_get_userbyid(m.owner),
                        upper(i.type), i.identity)
          FROM made m, pg_identify_object(m.classid, m.oid, 0) i
          WHERE NOT pg_has_role(m.owner, lock_owner, 'MEMBER')) x;
    IF problems IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'LKA03', MESSAGE = format(
            'lock schema %I: code another role makes there could run inside the protocol as %I, the lock tables'' owner: %s',
            lock_schema, pg_get_userbyid(lock_owner), problems);
    END IF;
    PERFORM set_config('search_path', caller_path, true);
END $$;
