-- The lifecycle GET's read by the job's primary key, whatever plan the function caches (issue 22).
--
-- Measured at a year of data (`scripts/bench scale`, 100 000 jobs, a project of 20 000): the GET
-- of a busy project's job took 5.2 ms at p50 against 0.56 for the small tenant's. The function's
-- statement had switched to a generic plan, which estimated `organization_id = $2 AND
-- project_id = $3` as one row (the planner multiplies the two selectivities as if a project
-- could belong to any organization, and it cannot see which project a generic plan is for) and
-- so found an index on (organization_id, project_id, ...) as cheap as the primary key: it read
-- the whole project and filtered it by id (17 000 rows removed by the filter, auto_explain).
--
-- The job is now found by its id alone, in a subquery with `OFFSET 0` (PostgreSQL plans such a
-- subquery on its own and never merges it into the outer query, so its only qualification is
-- the primary key's), and its scope is checked on that one row. Same signature, same columns,
-- same rules; CREATE OR REPLACE keeps the grants V4 and V5 gave. local/tests/api/scale.rs checks
-- the GET's plan and the index entries it reads, on the seventh call and with generic plans
-- forced.

SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

DO $migration$
DECLARE
    -- The tables' schema, quoted as an identifier, in place of every `@.` below (as in V6).
    s text := quote_ident(current_schema()) || '.';
    read_columns text := $cols$c.id, c.organization_id, c.project_id, c.page_import_id, c.figma_file_key, c.screen_id,
        c.placement_target,
        CASE WHEN @.code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, @D)
            THEN '2' ELSE c.status::text END AS status,
        c.attempt, c.nonce, c.result_url, c.warning_count,
        CASE WHEN @.code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, @D)
            THEN 'timed out' ELSE c.error_message END AS error_message,
        c.materialized_at, c.materialized_node_id, c.created_at,
        CASE WHEN @.code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, @D)
            THEN COALESCE(a.started_at, c.created_at) + make_interval(secs => @D) ELSE c.updated_at END AS updated_at,
        c.created_by,
        CASE WHEN @.code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, @D)
            THEN 'system:deadline' ELSE c.updated_by END AS updated_by,
        a.progress_percent, a.progress_stage, a.progress_updated_at,
        COALESCE(a.started_at, c.created_at) AS attempt_started_at, a.cancelled_at$cols$;
BEGIN
    EXECUTE replace(replace(replace($def$
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
    -- caller's). The job by its primary key first (OFFSET 0: planned alone), then its scope.
    SELECT @COLS
    INTO r
    FROM (SELECT * FROM @.code2des WHERE id = $1 OFFSET 0) c LEFT JOIN @.code2des_attempt a ON a.code2des_id = c.id
    WHERE c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL
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
$def$, '@COLS', read_columns), '@D', '$5'), '@.', s);
END $migration$;
