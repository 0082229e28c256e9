-- The two hot reads' functions (V5's code2des_read_job, V3's code2des_list_jobs) without a SET
-- clause: every relation they read is named with its schema instead (issue 13).
--
-- Why: a function with `SET search_path` makes every call save the session's settings, set
-- the path (parsing it and recomputing the namespace search) and restore them when it returns.
-- Measured on the server, side by side (docs/PERFORMANCE.md section 5): about 15 of the 300
-- microseconds of server CPU that one GET read costs, and in the benchmark's rounds the read
-- went from 0.57-0.62 to 0.63-0.67 of the prepared SELECT (the list's from 0.62-0.64 to
-- 0.67-0.69).
--
-- What the SET clause guarded stays guarded. It made the tables resolve in this schema, with
-- pg_temp last, whatever the caller's search_path: now each table is named with the schema
-- these migrations run in (the tables' own, written in when this migration runs), so neither a
-- temporary table nor one in another schema can stand in for it. Built-in functions and
-- operators resolve in pg_catalog, which PostgreSQL searches first unless a caller's own
-- search_path lists it later; the functions are SECURITY INVOKER (they read with the caller's
-- privileges), so such a caller could only mislead their own query, as with any statement they
-- send. Same bodies otherwise (the rules, parameters, columns, STABLE), same privileges:
-- CREATE OR REPLACE keeps the grants V4 and V5 gave, and drops the SET clause with the old
-- definition. The SELECTs are still the bodies' first statements, which the benchmark and
-- local/tests/api/sweep.rs read back from pg_proc.

DO $migration$
DECLARE
    -- The tables' schema, quoted as an identifier, in place of every `@.` below.
    s text := quote_ident(current_schema()) || '.';
BEGIN
    EXECUTE replace($def$
CREATE OR REPLACE FUNCTION @.code2des_read_job(
    p_id varchar, p_organization_id integer, p_project_id integer, p_subject varchar, p_deadline_secs float8)
RETURNS record
LANGUAGE plpgsql STABLE
AS $fn$
#variable_conflict use_column
DECLARE
    r record;
BEGIN
    -- One job visible to the caller: member of a live organization, the project live and in it,
    -- the source page import live, the job not deleted. No row: NULL (not found, or not the
    -- caller's). The columns, in this order, are shared::model::READ_COLUMNS.
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
    INTO r
    FROM @.code2des c LEFT JOIN @.code2des_attempt a ON a.code2des_id = c.id
    WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL
        AND EXISTS (SELECT 1 FROM @.organization_member m
            JOIN @.organization o ON o.id = m.organization_id AND o.deleted_at IS NULL
            JOIN @.project p ON p.organization_id = o.id AND p.deleted_at IS NULL
            JOIN @.page_import pi ON pi.id = c.page_import_id AND pi.deleted_at IS NULL
            WHERE m.organization_id = c.organization_id AND m.subject = $4 AND p.id = c.project_id);
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN r;
END
$fn$
$def$, '@.', s);
    EXECUTE replace($def$
CREATE OR REPLACE FUNCTION @.code2des_list_jobs(
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
    WITH scope AS (SELECT 1 AS ok FROM @.organization_member m
        JOIN @.organization o ON o.id = m.organization_id AND o.deleted_at IS NULL
        JOIN @.project p ON p.organization_id = o.id AND p.deleted_at IS NULL
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
        FROM @.code2des c LEFT JOIN @.code2des_attempt a ON a.code2des_id = c.id
        WHERE c.organization_id = $1 AND c.project_id = $2 AND c.deleted_at IS NULL
            AND ($5::varchar IS NULL OR c.figma_file_key = $5)
            AND ($6::text IS NULL OR CASE WHEN (c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL
                THEN c.created_at WHEN a.attempt = c.attempt THEN a.started_at END
                < now() - make_interval(secs => $4), false)) THEN '2' ELSE c.status::text END = $6::text)
            AND ($7::timestamptz IS NULL OR (c.created_at, c.id) < ($7::timestamptz, $8::varchar))
            AND EXISTS (SELECT 1 FROM @.page_import pi WHERE pi.id = c.page_import_id AND pi.deleted_at IS NULL)
        ORDER BY c.created_at DESC, c.id DESC LIMIT $9) j ON true;
END
$fn$
$def$, '@.', s);
END $migration$;
