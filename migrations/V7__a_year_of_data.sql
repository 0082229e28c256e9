-- A year of data (issue 22): the deadline rule written once, reads whose cost follows the page
-- and not the table, and what retention needs. The indexes these plans use are built by the
-- online step migrations/online/N7__list_sweep_and_purge_indexes.sql (CREATE INDEX
-- CONCURRENTLY cannot run in a transaction, and every file of this folder runs in one).
--
-- Expand only: nothing the previous release calls is dropped or renamed. The two read
-- functions keep their signatures and their columns (CREATE OR REPLACE keeps the grants V4
-- and V5 gave); the new functions are granted here.

DO $migration$
DECLARE
    -- The tables' schema, quoted as an identifier, in place of every `@.` below (as in V6: no
    -- temporary table, nor one of another schema, can stand in for them).
    s text := quote_ident(current_schema()) || '.';
    -- What a reader sees of job `c` and its attempt row `a`, `@D` the deadline in seconds: a
    -- job past its deadline reads as failed `timed out`, updated by the deadline at the moment
    -- it passed. The columns and their order are shared::db::columns::READ_COLUMNS.
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
    -- One branch of the list: the jobs of one stored status ('@S'), newest first from the
    -- keyset position. On its index, (organization, project[, file], status, created_at, id)
    -- WHERE deleted_at IS NULL, it reads as far as the page needs and stops: an ORDER BY and a
    -- LIMIT of its own are what let PostgreSQL merge branches in order (a Merge Append of
    -- index scans) instead of reading and sorting all of them (a branch with a WHERE of its own
    -- is planned as a subquery, whose order is lost unless it asks for one). Its LIMIT is the
    -- largest page the list asks for, a constant: the branch is read lazily, so it costs
    -- nothing beyond the page, and a cached generic plan knows the branch is small (with
    -- `LIMIT $9` it guessed a tenth of the project and planned parallel workers for it). @F is
    -- the file filter or nothing, @X a further condition (the deadline) or nothing.
    branch text := $b$(SELECT @COLS
        FROM @.code2des c LEFT JOIN @.code2des_attempt a ON a.code2des_id = c.id
        WHERE c.organization_id = $1 AND c.project_id = $2@F AND c.status = '@S' AND c.deleted_at IS NULL
            AND (c.created_at, c.id) < (v_after_created_at, v_after_id)
            AND EXISTS (SELECT 1 FROM @.page_import pi WHERE pi.id = c.page_import_id AND pi.deleted_at IS NULL)@X
        ORDER BY c.created_at DESC, c.id DESC LIMIT 101)$b$;
    overdue text := ' AND @.code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, $4)';
    -- The list's shapes, each its own statement (so each keeps an index plan of its own, whatever
    -- the arguments: one statement with `$5 IS NULL OR …` filters could cache a generic plan
    -- that uses no index at all), and each exact about the status as read:
    --   all:        the three stored statuses, merged;
    --   processing: stored processing, not past the deadline;
    --   completed:  stored completed;
    --   failed:     stored failed, merged with stored processing past the deadline (the sweep
    --               persists those within a minute, so that correction set stays small).
    shapes text[] := ARRAY['all', 'processing', 'completed', 'failed'];
    shape text;
    file_filter text;
    bodies text := '';
    q text;
BEGIN
    -- THE deadline rule (SPEC sections 4 and 7): job `c` is processing past the deadline,
    -- counted from the start of its CURRENT attempt (`a`, the job's attempt row; none for a job
    -- older than V2, whose one attempt started when it was created). An attempt row of another
    -- attempt (read from an older snapshot than a locked `c`) means the attempt has just been
    -- restarted: not overdue. Every read, every write and the sweep call it; it is inlined into
    -- each of their plans (one SQL expression, STABLE like now()), so it costs what the
    -- expression costs and the indexes stay usable.
    EXECUTE replace($def$
CREATE FUNCTION @.code2des_overdue(
    p_status @.code2des_status, p_attempt integer, p_created_at timestamptz,
    p_current_attempt integer, p_started_at timestamptz, p_deadline_secs float8)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN p_status = '0' AND COALESCE(
    CASE WHEN p_current_attempt IS NULL THEN p_created_at WHEN p_current_attempt = p_attempt THEN p_started_at END
        < now() - make_interval(secs => p_deadline_secs),
    false)
$def$, '@.', s);

    -- The lifecycle GET's read: V5's function, the rule now called rather than spelled out.
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
    -- caller's).
    SELECT @COLS
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
$def$, '@COLS', read_columns), '@D', '$5'), '@.', s);

    -- The discovery list: one statement per shape, by project or by file.
    -- A branch by project states `created_at < 'infinity'` (true of every job) because its index
    -- says so in its predicate: a branch by file, which does not say it, then cannot use the
    -- project's index. Without that, a cached generic plan took the project's index for a file
    -- (both are in keyset order, and a generic plan cannot tell how many of the project's jobs
    -- are in the file) and read the whole project to find a rare file's page.
    FOREACH file_filter IN ARRAY ARRAY[$f$ AND c.created_at < 'infinity'$f$, ' AND c.figma_file_key = $5'] LOOP
        FOREACH shape IN ARRAY shapes LOOP
            q := CASE shape
                WHEN 'all' THEN
                    replace(replace(branch, '@S', '0'), '@X', '') || ' UNION ALL '
                    || replace(replace(branch, '@S', '1'), '@X', '') || ' UNION ALL '
                    || replace(replace(branch, '@S', '2'), '@X', '')
                WHEN 'processing' THEN replace(replace(branch, '@S', '0'), '@X', ' AND NOT' || substr(overdue, 5))
                WHEN 'completed' THEN replace(replace(branch, '@S', '1'), '@X', '')
                ELSE replace(replace(branch, '@S', '2'), '@X', '') || ' UNION ALL '
                    || replace(replace(branch, '@S', '0'), '@X', overdue)
            END;
            bodies := bodies || format(E'\n    WHEN %L THEN\n        RETURN QUERY WITH scope AS (%s)\n'
                '        SELECT j.* FROM scope LEFT JOIN LATERAL (SELECT * FROM (%s) u\n'
                '            ORDER BY u.created_at DESC, u.id DESC LIMIT $9) j ON true;',
                shape || CASE WHEN file_filter LIKE '%figma_file_key%' THEN ' by file' ELSE '' END,
                'SELECT 1 AS ok FROM @.organization_member m'
                    || ' JOIN @.organization o ON o.id = m.organization_id AND o.deleted_at IS NULL'
                    || ' JOIN @.project p ON p.organization_id = o.id AND p.deleted_at IS NULL'
                    || ' WHERE m.organization_id = $1 AND m.subject = $3 AND p.id = $2',
                replace(q, '@F', file_filter));
        END LOOP;
    END LOOP;
    EXECUTE replace(replace(replace($def$
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
-- Every branch streams its index in keyset order; a plan that sorts instead (an index in
-- another order, then a sort of everything it found) looks cheap to a generic plan, which
-- cannot tell a project of 20 jobs from one of 300 000. With sorts priced out, the one plan
-- left for each branch is the ordered index scan that stops at the page.
SET enable_sort = off
SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
DECLARE
    -- The first page starts above every row: the keyset condition is then always an index
    -- range, never an `IS NULL OR` that a cached plan could not use.
    v_after_created_at timestamptz := COALESCE(p_after_created_at, 'infinity');
    v_after_id varchar := COALESCE(p_after_id, '');
    v_shape text := CASE p_status WHEN '0' THEN 'processing' WHEN '1' THEN 'completed' WHEN '2' THEN 'failed'
        ELSE 'all' END || CASE WHEN p_figma_file_key IS NULL THEN '' ELSE ' by file' END;
BEGIN
    -- A page of at most 100 jobs and one more to learn whether a next page exists (the
    -- branches' constant LIMIT).
    IF p_limit NOT BETWEEN 1 AND 101 THEN
        RAISE EXCEPTION 'code2des_list_jobs: p_limit must be 1 to 101, not %', p_limit USING ERRCODE = '22023';
    END IF;
    -- `scope` yields one row exactly when the caller may list this project, so "not yours" (no
    -- row: 404) and "nothing yet" (one all-NULL row: an empty page) stay apart. Newest first,
    -- strictly older than the keyset position, at most $9 rows; the status filter ($6, a
    -- database label) is the status as read, deadline ($4 seconds) applied.
    CASE v_shape@BODIES
    END CASE;
END
$fn$
$def$, '@BODIES', replace(bodies, '@COLS', read_columns)), '@D', '$4'), '@.', s);

    -- Retention (PURGE_AFTER_DAYS): the purge deletes jobs soft-deleted that many days ago, their
    -- attempt and idempotency rows with them (ON DELETE CASCADE). The application role deletes
    -- no job itself (V4: jobs are soft-deleted), so this is the one way it can: SECURITY
    -- DEFINER, for the ids it names, and only those the rule allows, re-checked here. Its
    -- search_path holds nothing a caller controls; every table is named with its schema.
    EXECUTE replace($def$
CREATE FUNCTION @.code2des_purge_jobs(p_ids varchar[], p_after_days integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    n integer;
BEGIN
    IF p_after_days IS NULL OR p_after_days < 1 THEN
        RAISE EXCEPTION 'code2des_purge_jobs: p_after_days must be at least 1, not %', p_after_days
            USING ERRCODE = '22023';
    END IF;
    DELETE FROM @.code2des c
    WHERE c.id = ANY (p_ids) AND c.deleted_at < now() - make_interval(days => p_after_days);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$
$def$, '@.', s);
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %scode2des_purge_jobs(varchar[], integer) FROM PUBLIC', s);

    -- The application role calls the new functions (V4's comment: grants are explicit).
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %scode2des_overdue(%scode2des_status, integer, timestamptz, '
            'integer, timestamptz, float8) TO code2des_app', s, s);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %scode2des_purge_jobs(varchar[], integer) TO code2des_app', s);
    END IF;
END $migration$;
