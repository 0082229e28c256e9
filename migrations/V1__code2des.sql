-- Code2Des job table, exactly as ../shared/SPEC.md section 2 (from seed/code2des-table.ja.txt),
-- plus the tables it depends on. Those are owned elsewhere in the product, so they are only
-- created when absent: on a shared database the product's own definitions win.
-- Released migrations are never edited; add V2__… instead.

CREATE TABLE IF NOT EXISTS organization (
    id         serial PRIMARY KEY,
    name       varchar(255) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    deleted_at timestamptz NULL
);

CREATE TABLE IF NOT EXISTS project (
    id              serial PRIMARY KEY,
    organization_id integer NOT NULL REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    name            varchar(255) NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    deleted_at      timestamptz NULL
);

CREATE TABLE IF NOT EXISTS organization_member (
    organization_id integer NOT NULL REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    subject         varchar(50) NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (organization_id, subject)
);

DO $$ BEGIN
    CREATE TYPE page_import_status AS ENUM ('0', '1', '2');
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

CREATE TABLE IF NOT EXISTS page_import (
    id              varchar(255) PRIMARY KEY,
    organization_id integer NOT NULL REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    project_id      integer NOT NULL REFERENCES project (id) ON UPDATE CASCADE ON DELETE CASCADE,
    status          page_import_status NOT NULL DEFAULT '0',
    capture_url     varchar(1000) NULL,
    created_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    deleted_at      timestamptz NULL
);

-- '0' processing, '1' completed (result fetch / materialization allowed), '2' failed.
CREATE TYPE code2des_status AS ENUM ('0', '1', '2');

CREATE TABLE code2des (
    id                   varchar(255) NOT NULL,
    organization_id      integer NOT NULL,
    project_id           integer NOT NULL,
    page_import_id       varchar(255) NOT NULL,
    figma_file_key       varchar(255) NOT NULL,
    screen_id            varchar(255) NOT NULL,
    placement_target     varchar(255) NULL,
    status               code2des_status NOT NULL DEFAULT '0',
    attempt              integer NOT NULL DEFAULT 1,
    nonce                varchar(255) NOT NULL,
    result_url           varchar(1000) NULL,
    warning_count        integer NULL,
    error_message        text NULL,
    materialized_at      timestamptz NULL,
    materialized_node_id varchar(255) NULL,
    created_at           timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at           timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    deleted_at           timestamptz NULL,
    created_by           varchar(50) NOT NULL,
    updated_by           varchar(50) NOT NULL,
    deleted_by           varchar(50) NULL,
    CONSTRAINT code2des_pkey PRIMARY KEY (id),
    CONSTRAINT code2des_organization_id_fkey FOREIGN KEY (organization_id)
        REFERENCES organization (id) ON UPDATE CASCADE ON DELETE CASCADE,
    CONSTRAINT code2des_project_id_fkey FOREIGN KEY (project_id)
        REFERENCES project (id) ON UPDATE CASCADE ON DELETE CASCADE,
    CONSTRAINT code2des_page_import_id_fkey FOREIGN KEY (page_import_id)
        REFERENCES page_import (id) ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE INDEX code2des_page_import_idx ON code2des (page_import_id);
CREATE INDEX code2des_project_status_idx ON code2des (project_id, status);
CREATE INDEX code2des_org_project_file_status_idx
    ON code2des (organization_id, project_id, figma_file_key, status);

-- Idempotency-Key bookkeeping for trigger (SPEC section 3): one row per (caller, scope, key),
-- pointing at the job the first call created. request_hash is a SHA-256 of the normalised body,
-- so the same key with another body can be told apart (422).
CREATE TABLE code2des_idempotency (
    subject         varchar(50) NOT NULL,
    organization_id integer NOT NULL,
    project_id      integer NOT NULL,
    idempotency_key varchar(255) NOT NULL,
    request_hash    varchar(64) NOT NULL,
    code2des_id     varchar(255) NOT NULL REFERENCES code2des (id) ON UPDATE CASCADE ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT code2des_idempotency_pkey PRIMARY KEY (subject, organization_id, project_id, idempotency_key)
);
