-- Quotas (issue 23, SPEC section 9): per-organization overrides of the two limits, and the
-- per-subject window that counts triggers and retries. The index that keeps counting an
-- organization's processing jobs as cheap as those jobs is built by the online step
-- migrations/online/N8__quota_index.sql (CREATE INDEX CONCURRENTLY cannot run here).
--
-- Expand only: two new tables, nothing the previous release uses is changed.

-- LOCAL: these end with this migration's transaction (refinery runs each file in one), so the
-- online index builds that follow on the same connection are not cut short by them.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

-- One row per organization whose quotas differ from the deployment's defaults
-- (MAX_ACTIVE_JOBS_PER_ORG, TRIGGERS_PER_MINUTE); a NULL column keeps that default. Operators
-- write it (docs/OPERATIONS.md, "Raising one organization's quota"); trigger and retry read it
-- in the statement that checks the limits, so a change holds from the next call on. There is
-- no "unlimited": a quota is a positive number, and a zero or negative one is refused here
-- rather than read as anything.
CREATE TABLE code2des_quota (
    organization_id     integer NOT NULL
                        REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    max_active_jobs     integer NULL,
    triggers_per_minute integer NULL,
    note                text NULL,
    updated_at          timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT code2des_quota_pkey PRIMARY KEY (organization_id),
    CONSTRAINT code2des_quota_max_active_jobs_check CHECK (max_active_jobs > 0),
    CONSTRAINT code2des_quota_triggers_per_minute_check CHECK (triggers_per_minute > 0)
);

-- The `burst` limit's counter: one row per subject, the window its first counted call opened
-- and the calls counted in it. Trigger and retry update it with INSERT … ON CONFLICT DO
-- UPDATE, which takes the row's lock and reads its newest version, so racing calls count one
-- after the other and exactly `limit` of them pass. A refused call's increment rolls back with
-- its transaction.
CREATE TABLE code2des_trigger_window (
    subject      varchar(50) NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    CONSTRAINT code2des_trigger_window_pkey PRIMARY KEY (subject),
    CONSTRAINT code2des_trigger_window_hits_check CHECK (hits >= 1)
);

-- The application role (V4's comment: grants are explicit). It reads the overrides and never
-- writes them: a function cannot raise its own tenant's quota. It counts in the window table.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT SELECT ON TABLE %I.code2des_quota TO code2des_app', current_schema());
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON TABLE %I.code2des_trigger_window TO code2des_app',
            current_schema());
    END IF;
END $$;
