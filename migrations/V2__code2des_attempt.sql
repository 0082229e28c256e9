-- SPEC section 7: the job after its first attempt. The seed's `code2des` table stays exactly
-- as section 2 gives it; what it has no column for lives here, one row per job, describing the
-- job's CURRENT attempt:
--   started_at   the deadline counts from the current attempt's start, not from created_at;
--   progress_*   the worker's last progress report for this attempt (a retry clears them);
--   cancelled_*  a user's cancel, which tells "cancelled" apart from a worker's failure that
--                happens to say "cancelled" (a repeated cancel answers 200 only for the former).
-- Deleting the job's row (never done: deletes are soft) would take this row with it.
CREATE TABLE code2des_attempt (
    code2des_id         varchar(255) NOT NULL
                        REFERENCES code2des (id) ON UPDATE CASCADE ON DELETE CASCADE,
    attempt             integer NOT NULL,
    started_at          timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    progress_percent    smallint,
    progress_stage      varchar(64),
    progress_updated_at timestamptz,
    cancelled_at        timestamptz,
    cancelled_by        varchar(50),
    CONSTRAINT code2des_attempt_pkey PRIMARY KEY (code2des_id),
    CONSTRAINT code2des_attempt_attempt_check CHECK (attempt >= 1),
    CONSTRAINT code2des_attempt_percent_check CHECK (progress_percent BETWEEN 0 AND 100),
    CONSTRAINT code2des_attempt_progress_check
        CHECK ((progress_percent IS NULL) = (progress_stage IS NULL)
           AND (progress_percent IS NULL) = (progress_updated_at IS NULL))
);

-- Jobs created before this migration: their first attempt started when they were created.
INSERT INTO code2des_attempt (code2des_id, attempt, started_at)
SELECT id, attempt, created_at FROM code2des
ON CONFLICT (code2des_id) DO NOTHING;
