-- The application role (SPEC section 8): what the five functions log in as. It may read and
-- write the rows they need and nothing else: no DDL, no ownership, no superuser, not the
-- cluster's master user. Only the migrate function logs in as the owner (who runs this file).
--
-- Roles belong to the whole server, not to one database, and many databases on one server run
-- these migrations (the test suite creates one per test, some at the same time): the role is
-- created only if absent, a concurrent creation is tolerated, and its attributes are only
-- corrected where they differ. Grants are per database and idempotent.
--
-- Login: in AWS the functions reach it through RDS Proxy with IAM auth tokens; the proxy logs
-- in to Aurora with the role's password, which the migrate function sets from the role's own
-- Secrets Manager secret (docs/DEPLOY.md, "The application role"). So the role is NOT granted
-- `rds_iam`: a PostgreSQL user on RDS logs in by exactly one method, and `rds_iam` would turn
-- the proxy's password login off. Locally (trust authentication) it logs in without one.
--
-- A later migration that adds a table or a function the functions use grants it here-style,
-- explicitly: no ALTER DEFAULT PRIVILEGES, so nothing new is reachable by accident.

DO $$
BEGIN
    CREATE ROLE code2des_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
EXCEPTION
    -- Exists already (duplicate_object), or another database's migration created it a moment
    -- ago (unique_violation on the catalog): either way it is there now.
    WHEN duplicate_object OR unique_violation THEN NULL;
END $$;

DO $$
BEGIN
    -- A role that exists with more power than this one needs is brought down to size. Only when
    -- it differs: ALTER ROLE from many databases at once would collide on the catalog row.
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app'
               AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication OR rolbypassrls OR NOT rolcanlogin)) THEN
        ALTER ROLE code2des_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    END IF;
END $$;

DO $$
DECLARE
    schema_name text := current_schema();
    t record;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO code2des_app', schema_name);

    -- The product's tables: read only (scope, membership and page import checks).
    EXECUTE format('GRANT SELECT ON TABLE %1$I.organization, %1$I.project, %1$I.organization_member, '
                   '%1$I.page_import TO code2des_app', schema_name);

    -- The job tables: read, insert, update. Every code2des* table, so that the lead's
    -- code2des_attempt (V2) and whatever V3 adds are covered without naming them twice.
    FOR t IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = schema_name AND c.relkind IN ('r', 'p') AND c.relname LIKE 'code2des%'
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON TABLE %I.%I TO code2des_app', schema_name, t.relname);
    END LOOP;

    -- DELETE only where the code deletes: a trigger whose manifest could not be written
    -- releases its Idempotency-Key (shared/src/store.rs). Jobs themselves are soft-deleted.
    EXECUTE format('GRANT DELETE ON TABLE %I.code2des_idempotency TO code2des_app', schema_name);

    -- Sequences of the job tables, if any (ids are UUIDv7 strings today).
    FOR t IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = schema_name AND c.relkind = 'S' AND c.relname LIKE 'code2des%'
    LOOP
        EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %I.%I TO code2des_app', schema_name, t.relname);
    END LOOP;

    -- Read functions of the job tables (plans the backend keeps), if any.
    FOR t IN
        SELECT p.oid::regprocedure::text AS signature FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = schema_name AND p.prokind = 'f' AND p.proname LIKE 'code2des%'
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO code2des_app', t.signature);
    END LOOP;
END $$;
