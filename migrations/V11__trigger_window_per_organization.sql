-- The `burst` limit counts a caller's triggers and retries per organization (issue 29): V8's
-- window was keyed by the subject alone, so three triggers in organization A spent the caller's
-- window in organization B, whose own limit was then applied to them.
--
-- Expand only: a new table; V8's code2des_trigger_window stays for the release before this one
-- (during a deploy each release counts in its own table, so a caller may briefly get one
-- window's worth more) and is dropped by a later contract migration.

SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

-- One row per (organization, subject): the window its first counted call opened and the calls
-- counted in it, updated by INSERT … ON CONFLICT DO UPDATE as V8's (racing calls count one
-- after the other). Rows go with their organization.
CREATE TABLE code2des_org_trigger_window (
    organization_id integer NOT NULL
                    REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    subject         varchar(50) NOT NULL,
    window_start    timestamptz NOT NULL,
    hits            integer NOT NULL,
    CONSTRAINT code2des_org_trigger_window_pkey PRIMARY KEY (organization_id, subject),
    CONSTRAINT code2des_org_trigger_window_hits_check CHECK (hits >= 1)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON TABLE %I.code2des_org_trigger_window TO code2des_app',
            current_schema());
    END IF;
END $$;
