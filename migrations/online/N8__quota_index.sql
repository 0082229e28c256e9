-- The index of migration V8's quota count, built without blocking writes (shared::db::migrate
-- says how this folder runs).

-- Trigger and retry count their organization's processing jobs (the `active` quota). Only
-- processing rows are indexed, so the count reads what the organization has running (and the
-- few overdue ones the sweep has not reached), never its history. The predicate's
-- `attempt > 0` is true of every job (V2: attempts start at 1); the count states it and no other
-- statement does, so no other plan can take this index: the list's processing branch in
-- particular must keep its own index in keyset order (V7), not read an organization's running
-- jobs in another order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS code2des_org_processing_idx
    ON code2des (organization_id) WHERE status = '0' AND deleted_at IS NULL AND attempt > 0;
