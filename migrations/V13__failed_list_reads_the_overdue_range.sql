-- The `failed` list reads what is overdue, not every processing job of the file (issue 40): V7's
-- failed shapes merge the stored-failed jobs with the stored-processing ones past the deadline,
-- and that second branch walked the file's (or the project's) processing jobs newest first,
-- testing the deadline on each, to find the few overdue ones: a file with 3 000 jobs running
-- read all 3 000 for every page of its failed list.
--
-- An attempt never starts before its job was created, so every overdue job was created more
-- than a deadline ago: the sweep already reads that range and no other (shared::db::sweep,
-- online step N7's code2des_processing_idx). The failed shapes' overdue branch now starts its
-- keyset range there: on the same list index, in the same order, the branch's upper bound is the
-- older of the page's position and now() - deadline. The jobs running in their first attempt
-- are all newer than that and are never read; what is read is the overdue jobs (which the sweep
-- persists within a minute) and the later attempts still running of jobs created longer than a
-- deadline ago. The deadline rule (`code2des_overdue`) is still tested on each row, so the
-- status as read, the order and the keyset pages are V7's exactly.
--
-- No column, no index: the job table stays the product's definition (SPEC section 2), and the
-- range is one of the list indexes that exist. Expand only: the function keeps its signature
-- and its columns (CREATE OR REPLACE keeps V4's grant); only its text changes.

SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

DO $migration$
DECLARE
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
    -- The failed shapes' overdue branch: the keyset condition of `branch` with its upper bound
    -- moved down to now() - deadline (@N) when that is older than the page's position. As one
    -- row comparison it is the single upper bound of the index range, so the scan starts there
    -- (a second, separate `created_at <` condition would leave the scan starting at the
    -- position, reading past the running jobs' index entries to reach it). It selects exactly
    -- the rows of `keyset AND created_at < @N`: when the position is older than @N, the
    -- position's condition already implies it; otherwise `(created_at, id) < (@N, '')` is
    -- `created_at < @N` (no id is below ''), which implies the position's condition.
    overdue_keyset text := $k$(LEAST(v_after_created_at, @N),
                CASE WHEN v_after_created_at < @N THEN v_after_id ELSE '' END)$k$;
    -- The list's shapes, each its own statement (so each keeps an index plan of its own, whatever
    -- the arguments: one statement with `$5 IS NULL OR …` filters could cache a generic plan
    -- that uses no index at all), and each exact about the status as read:
    --   all:        the three stored statuses, merged;
    --   processing: stored processing, not past the deadline;
    --   completed:  stored completed;
    --   failed:     stored failed, merged with stored processing past the deadline (the sweep
    --               persists those within a minute, so that correction set stays small), the
    --               latter read from now() - deadline down (`overdue_keyset`).
    shapes text[] := ARRAY['all', 'processing', 'completed', 'failed'];
    shape text;
    file_filter text;
    bodies text := '';
    q text;
BEGIN
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
                    || replace(replace(replace(replace(branch, '(v_after_created_at, v_after_id)', overdue_keyset),
                        '@N', 'now() - make_interval(secs => $4)'), '@S', '0'), '@X', overdue)
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
END $migration$;
