-- Several viewports from one capture (issue 40 item 3): a trigger may name 1 to 4 layout widths
-- (`viewports`, 320 to 2 560 px each, no two equal, in the caller's order). They go into every
-- attempt's manifest, so the job must remember them for POST …/retry, and the quota weighs a
-- job by their count (each width is a whole conversion's worth of work).
--
-- Kept beside the job's attempt row (V2): the job table stays the product's definition (SPEC
-- section 2), and the attempt row is already read with the job by every statement that needs
-- them (the quota count, the retry). A retry resets that row's attempt columns only
-- (shared::db::retry), so the widths carry over to every attempt of the job.
--
-- Expand only: one nullable column, NULL for every job before it and for a job that named no
-- viewports (one layout at the capture's own width, as before). V4's grant on the table covers
-- it (table grants take in columns added later).

SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '60s';

ALTER TABLE code2des_attempt ADD COLUMN viewports integer[] NULL;

-- The same bounds as the trigger's check (code2des_wire::protocol::viewports_fault), so no
-- other writer can store what a manifest may not carry. NOT VALID: the rows before this migration
-- are all NULL, and checking them would read the whole table under the lock.
ALTER TABLE code2des_attempt ADD CONSTRAINT code2des_attempt_viewports_check CHECK (
    viewports IS NULL OR (
        cardinality(viewports) BETWEEN 1 AND 4
        AND array_ndims(viewports) = 1
        AND 320 <= ALL (viewports) AND 2560 >= ALL (viewports)
    )
) NOT VALID;
