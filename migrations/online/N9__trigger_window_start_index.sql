-- The index of migration V12's pruning, built without blocking writes (shared::db::migrate says
-- how this folder runs).

-- The hourly purge deletes trigger windows that ended, oldest first, a batch at a time: this
-- index leads to exactly those rows. A trigger's upsert keeps `window_start` within a window (only
-- `hits` changes), so those updates stay HOT; a new window moves the row in the index once.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_org_trigger_window_start_idx
    ON code2des_org_trigger_window (window_start);
