-- The indexes of migration V7's plans, built without blocking writes (shared::db::migrate says
-- how this folder runs). Every one of them is small beside the table's reads it replaces; their
-- sizes and write cost at a year of data are in docs/CAPACITY.md.

-- The list by project, per stored status, in keyset order (V7's code2des_list_jobs merges the
-- statuses it needs). Deleted jobs are never listed, so they are not indexed. `created_at <
-- 'infinity'` holds for every job; the list's branches by project say it and those by file do
-- not, so a branch by file never reads the whole project through this index (V7 says more).
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_project_status_created_idx
    ON code2des (organization_id, project_id, status, created_at, id)
    WHERE deleted_at IS NULL AND created_at < 'infinity';

-- The list by Figma file, the same way.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_file_status_created_idx
    ON code2des (organization_id, project_id, figma_file_key, status, created_at, id) WHERE deleted_at IS NULL;

-- The sweep: processing jobs by age. An attempt never starts before its job was created, so a
-- job past its deadline is among those created before now() - deadline: the sweep reads those
-- and no others (the overdue ones, and the few still processing a later attempt).
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_processing_idx
    ON code2des (created_at) WHERE status = '0' AND deleted_at IS NULL;

-- The purge: soft-deleted jobs by the time they were deleted.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_deleted_idx
    ON code2des (deleted_at) WHERE deleted_at IS NOT NULL;

-- Deleting a job cascades to its idempotency keys: without an index on the reference, every
-- purged job would scan the whole key table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_idempotency_job_idx
    ON code2des_idempotency (code2des_id);

-- Idempotency keys expire after 24 hours: the purge finds them by age.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_idempotency_created_idx
    ON code2des_idempotency (created_at);
