-- The two hot reads (lifecycle GET and the list; the result GET reads through the first) as
-- PL/pgSQL functions, so that their plans are cached by the server (issue 13).
--
-- Why: every statement of the service goes through `query_typed`, an UNNAMED statement parsed
-- and planned on every call, because a named prepared statement pins the client's session on
-- RDS Proxy. These two reads join six relations under SPEC's visibility rules, and planning
-- them cost about three times their execution. A PL/pgSQL function keeps the plan of its
-- RETURN QUERY for the life of the backend session (custom plans for the first five calls, then
-- the generic plan), and a session-level cache the client never names pins nothing: the proxy
-- may hand the connection to anyone. The call itself, `SELECT * FROM code2des_get_job(...)`, is
-- still an unnamed statement, but a trivial one to plan. Measured in docs/PERFORMANCE.md §5.
--
-- Each body is exactly the statement shared/src/store.rs ran before (GET_JOB, LIST_JOBS, built
-- from its `read_columns!`, `overdue!` and `visible!` macros), with the same positional
-- parameters: the benchmark (bench/src/reads.rs) reads the bodies back from pg_proc and runs them
-- as prepared statements, the baseline it compares against. Reads never write: a processing job
-- past the deadline ($5 / $4 seconds from the start of its current attempt) is SHOWN as failed
-- `timed out`, updated by `system:deadline` at the moment the deadline passed; the sweep and
-- the write paths persist it. If that rule changes in store.rs, a later migration replaces
-- these functions (CREATE OR REPLACE) in the same commit.
--
-- LANGUAGE plpgsql, not sql: a SQL function is either inlined into the caller's statement (and
-- then planned with it, every call) or, when it cannot be inlined, planned on every call too.
-- STABLE: they read only, and see the snapshot of the calling statement. SECURITY INVOKER (the
-- default): they read with the caller's privileges, nothing more. search_path is pinned to this
-- schema (the one the tables were created in) with pg_temp last, so no temporary relation can
-- stand in for a table; a SET clause costs nothing measurable on a PL/pgSQL function (§5).
-- EXECUTE: revoked from PUBLIC here, granted to code2des_app by V4 (every `code2des%` function).

CREATE FUNCTION code2des_get_job(
    p_id varchar, p_organization_id integer, p_project_id integer, p_subject varchar, p_deadline_secs float8)
RETURNS TABLE (
    id varchar, organization_id integer, project_id integer, page_import_id varchar, figma_file_key varchar,
    screen_id varchar, placement_target varchar, status text, attempt integer, nonce varchar,
    result_url varchar, warning_count integer, error_message text, materialized_at timestamptz,
    materialized_node_id varchar, created_at timestamptz, updated_at timestamptz, created_by varchar,
    updated_by varchar, progress_percent smallint, progress_stage varchar, progress_updated_at timestamptz,
    attempt_started_at timestamptz, cancelled_at timestamptz)
LANGUAGE plpgsql STABLE
AS $fn$
#variable_conflict use_column
BEGIN
    -- One job visible to the caller: member of a live organization, the project live and in it,
    -- the source page import live, the job not deleted. No row: not found (or not the caller's).
    RETURN QUERY
    SELECT c.id, c.organization_id, c.project_id, c.page_import_id, c.figma_file_key, c.screen_id,
        c.placement_target,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $5), false))
            THEN '2' ELSE c.status::text END AS status,
        c.attempt, c.nonce, c.result_url, c.warning_count,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $5), false))
            THEN 'timed out' ELSE c.error_message END AS error_message,
        c.materialized_at, c.materialized_node_id, c.created_at,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $5), false))
            THEN COALESCE(a.started_at, c.created_at) + make_interval(secs => $5) ELSE c.updated_at END AS updated_at,
        c.created_by,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $5), false))
            THEN 'system:deadline' ELSE c.updated_by END AS updated_by,
        a.progress_percent, a.progress_stage, a.progress_updated_at,
        COALESCE(a.started_at, c.created_at) AS attempt_started_at, a.cancelled_at
    FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id
    WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL
        AND EXISTS (SELECT 1 FROM organization_member m
            JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL
            JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL
            JOIN page_import pi ON pi.id = c.page_import_id AND pi.deleted_at IS NULL
            WHERE m.organization_id = c.organization_id AND m.subject = $4 AND p.id = c.project_id);
END
$fn$;

CREATE FUNCTION code2des_list_jobs(
    p_organization_id integer, p_project_id integer, p_subject varchar, p_deadline_secs float8,
    p_figma_file_key varchar, p_status text, p_after_created_at timestamptz, p_after_id varchar, p_limit bigint)
RETURNS TABLE (
    id varchar, organization_id integer, project_id integer, page_import_id varchar, figma_file_key varchar,
    screen_id varchar, placement_target varchar, status text, attempt integer, nonce varchar,
    result_url varchar, warning_count integer, error_message text, materialized_at timestamptz,
    materialized_node_id varchar, created_at timestamptz, updated_at timestamptz, created_by varchar,
    updated_by varchar, progress_percent smallint, progress_stage varchar, progress_updated_at timestamptz,
    attempt_started_at timestamptz, cancelled_at timestamptz)
LANGUAGE plpgsql STABLE
AS $fn$
#variable_conflict use_column
BEGIN
    -- `scope` yields one row exactly when the caller may list this project, so "not yours" (no
    -- row: 404) and "nothing yet" (one all-NULL row: an empty page) stay apart. Newest first,
    -- keyset position strictly older than ($7, $8), at most $9 rows; the status filter ($6, a
    -- database label) compares the status as read, deadline applied.
    RETURN QUERY
    WITH scope AS (SELECT 1 AS ok FROM organization_member m
        JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL
        JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL
        WHERE m.organization_id = $1 AND m.subject = $3 AND p.id = $2)
    SELECT j.* FROM scope LEFT JOIN LATERAL (SELECT c.id, c.organization_id, c.project_id, c.page_import_id,
        c.figma_file_key, c.screen_id, c.placement_target,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $4), false))
            THEN '2' ELSE c.status::text END AS status,
        c.attempt, c.nonce, c.result_url, c.warning_count,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $4), false))
            THEN 'timed out' ELSE c.error_message END AS error_message,
        c.materialized_at, c.materialized_node_id, c.created_at,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $4), false))
            THEN COALESCE(a.started_at, c.created_at) + make_interval(secs => $4) ELSE c.updated_at END AS updated_at,
        c.created_by,
        CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at
            WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => $4), false))
            THEN 'system:deadline' ELSE c.updated_by END AS updated_by,
        a.progress_percent, a.progress_stage, a.progress_updated_at,
        COALESCE(a.started_at, c.created_at) AS attempt_started_at, a.cancelled_at
        FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id
        WHERE c.organization_id = $1 AND c.project_id = $2 AND c.deleted_at IS NULL
            AND ($5::varchar IS NULL OR c.figma_file_key = $5)
            AND ($6::text IS NULL OR CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL
                THEN c.created_at WHEN a.attempt = c.attempt THEN a.started_at END
                < now() - make_interval(secs => $4), false)) THEN '2' ELSE c.status::text END = $6::text)
            AND ($7::timestamptz IS NULL OR (c.created_at, c.id) < ($7::timestamptz, $8::varchar))
            AND EXISTS (SELECT 1 FROM page_import pi WHERE pi.id = c.page_import_id AND pi.deleted_at IS NULL)
        ORDER BY c.created_at DESC, c.id DESC LIMIT $9) j ON true;
END
$fn$;

DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'code2des_get_job(varchar, integer, integer, varchar, float8)',
        'code2des_list_jobs(integer, integer, varchar, float8, varchar, text, timestamptz, varchar, bigint)'
    ] LOOP
        -- Resolved in the schema these migrations run in (the tables' schema), whatever the
        -- caller's search_path; temporary relations last.
        EXECUTE format('ALTER FUNCTION %I.%s SET search_path = pg_catalog, %I, pg_temp',
                       current_schema(), f, current_schema());
        EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), f);
    END LOOP;
END $$;
