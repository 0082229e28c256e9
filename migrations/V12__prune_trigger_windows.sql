-- Trigger-window rows past their window leave the table (issue 40): V11's table kept one row per
-- (organization, subject) that ever triggered, for ever. The hourly purge removes those whose
-- window ended, a batch at a time, in window order (online step N9's index).
--
-- The application role has no DELETE on the table (V11: a function must not reset its own
-- tenant's counters): it prunes only through this function, which re-checks that a row's window
-- has ended. A window that ended counts nothing any more (V11's upsert starts a new one), so
-- deleting it changes no answer. Expand only.

SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

DO $migration$
DECLARE
    s text := quote_ident(current_schema()) || '.';
BEGIN
    -- SECURITY DEFINER, for rows whose window ended at least p_window_secs ago, at most p_limit
    -- of them. Its search_path holds nothing a caller controls; every table is named with its
    -- schema. The floor is V8's burst window: no caller can prune a live window. The row is
    -- re-checked as the DELETE finds it (READ COMMITTED re-evaluates `w`'s condition on a row a
    -- racing trigger just renewed), so a renewed window stays.
    EXECUTE replace($def$
CREATE FUNCTION @.code2des_prune_trigger_windows(p_window_secs float8, p_limit integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    n integer;
BEGIN
    IF p_window_secs IS NULL OR p_window_secs < 60 THEN
        RAISE EXCEPTION 'code2des_prune_trigger_windows: p_window_secs must be at least 60, not %', p_window_secs
            USING ERRCODE = '22023';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'code2des_prune_trigger_windows: p_limit must be at least 1, not %', p_limit
            USING ERRCODE = '22023';
    END IF;
    DELETE FROM @.code2des_org_trigger_window w
    USING (SELECT organization_id, subject FROM @.code2des_org_trigger_window
           WHERE window_start < now() - make_interval(secs => p_window_secs)
           ORDER BY window_start LIMIT p_limit) old
    WHERE w.organization_id = old.organization_id AND w.subject = old.subject
      AND w.window_start < now() - make_interval(secs => p_window_secs);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$
$def$, '@.', s);
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %scode2des_prune_trigger_windows(float8, integer) FROM PUBLIC', s);
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %scode2des_prune_trigger_windows(float8, integer) TO code2des_app', s);
    END IF;
END $migration$;
