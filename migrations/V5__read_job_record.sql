-- The lifecycle GET's read as ONE value: `SELECT code2des_read_job(...)`, a PL/pgSQL function
-- returning the job as an anonymous record, replaces `SELECT * FROM code2des_get_job(...)`
-- (migration V3), which returned the same row as a set of 24 columns (issue 13).
--
-- Why: the read's own plan is cached by the backend either way (PL/pgSQL keeps it per session;
-- see V3); what the unnamed call still costs every time is the call statement itself. As a set
-- in FROM it is a function scan over 24 columns: parsed, analysed and planned with a tuple
-- descriptor of 24 entries, a RowDescription of 24 columns to send and, on the client, to read,
-- and a tuplestore between the function and the scan. As one value in the select list it is a
-- one-column Result with a function call: measured side by side (docs/PERFORMANCE.md section
-- 5) the read through tokio-postgres went from about 0.45 to about 0.63 of the same SELECT as a
-- named prepared statement. The record's fields are sent in binary with their type OIDs
-- (record_send); `shared::record` reads them by position, in the order of the SELECT below,
-- which is `shared::model::READ_COLUMNS`: a test reads every kind of job both ways.
--
-- RETURNS record, not a named composite type: a column of a type the client does not know
-- makes tokio-postgres look the type up with a named prepared statement of its own, which
-- would pin the session on RDS Proxy; RECORD is built in. Not SETOF: a set-returning
-- PL/pgSQL function cannot run in a select list (materialize mode), and one row is all it
-- returns. NULL (SQL NULL, not a record of NULLs) when the caller may not see the job.
--
-- Same rules as V3, same parameters, same snapshot semantics (STABLE), same privileges
-- (SECURITY INVOKER; EXECUTE revoked from PUBLIC, granted to code2des_app when the role
-- exists: V4 created it), same pinned search_path. The list keeps V3's code2des_list_jobs: a
-- set-returning function is the only PL/pgSQL shape for a set, and over a page of rows the
-- call's own cost matters less (section 5). V3's code2des_get_job goes: nothing calls it.

CREATE FUNCTION code2des_read_job(
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
    FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id
    WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL
        AND EXISTS (SELECT 1 FROM organization_member m
            JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL
            JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL
            JOIN page_import pi ON pi.id = c.page_import_id AND pi.deleted_at IS NULL
            WHERE m.organization_id = c.organization_id AND m.subject = $4 AND p.id = c.project_id);
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN r;
END
$fn$;

DROP FUNCTION code2des_get_job(varchar, integer, integer, varchar, float8);

DO $$
DECLARE
    f text := 'code2des_read_job(varchar, integer, integer, varchar, float8)';
BEGIN
    EXECUTE format('ALTER FUNCTION %I.%s SET search_path = pg_catalog, %I, pg_temp',
                   current_schema(), f, current_schema());
    EXECUTE format('REVOKE ALL ON FUNCTION %I.%s FROM PUBLIC', current_schema(), f);
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO code2des_app', current_schema(), f);
    END IF;
END $$;
