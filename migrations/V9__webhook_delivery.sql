-- SPEC section 9: Standard Webhooks' idempotency. A worker retries a delivery with the same
-- `webhook-id`; a redelivery is answered what the first delivery was answered (status and
-- body), even after the job has moved on (retried, completed, deleted). One row per id:
--   status, body  the answer, as sent (200 acks, 409 fenced / already_terminal, 410);
--                 401, 400, 404 and 5xx are never stored: the first is not a verified id, the
--                 others are answered again the same way (or, a 503, should be retried).
--   created_at    for purging old deliveries by age (the index below).
-- A job's purge takes its deliveries with it (ON DELETE CASCADE; the code2des_id index keeps
-- that cascade an index lookup, not a scan of this table per job).
-- The foreign key takes a SHARE ROW EXCLUSIVE lock on code2des, which waits for (and then
-- holds back) every write of a job: give up after a moment rather than queue them all behind
-- us (the deploy's migrate step fails and is run again). Both settings end with refinery's
-- transaction.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '30s';

CREATE TABLE code2des_webhook_delivery (
    webhook_id  varchar(255) NOT NULL,
    code2des_id varchar(255) NOT NULL REFERENCES code2des (id) ON UPDATE CASCADE ON DELETE CASCADE,
    status      smallint NOT NULL,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT code2des_webhook_delivery_pkey PRIMARY KEY (webhook_id),
    CONSTRAINT code2des_webhook_delivery_status_check CHECK (status BETWEEN 200 AND 499)
);

CREATE INDEX code2des_webhook_delivery_created_at_idx ON code2des_webhook_delivery (created_at);
CREATE INDEX code2des_webhook_delivery_code2des_id_idx ON code2des_webhook_delivery (code2des_id);

-- The application role (V4): granted explicitly, as V4 asks of every later table. SELECT,
-- INSERT and UPDATE as on every job table (local/tests/app_role.rs holds each to that; the code
-- never updates an answer once given), and DELETE for purging old deliveries by age.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'code2des_app') THEN
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE %I.code2des_webhook_delivery TO code2des_app',
                       current_schema());
    END IF;
END $$;
