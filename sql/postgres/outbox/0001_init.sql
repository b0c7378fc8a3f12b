-- outbox/1: the outbox message table, its indexes and the replay audit
-- (outbox.md §3.2–§3.4). Templated: {{s}} is the quoted schema and a dot,
-- {{outbox}} / {{outbox_audit}} the quoted tables, {{outbox_raw}} the
-- validated table name inside derived names (<table>_<suffix>, suffix ≤ 13
-- bytes). Released: never edit; every change is a new version.
-- spool:up
CREATE TABLE IF NOT EXISTS {{s}}spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE {{s}}{{outbox}} (
  seq bigint GENERATED ALWAYS AS IDENTITY,
  xact_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id text COLLATE "C" NOT NULL CHECK (octet_length(id) BETWEEN 1 AND 255),
  topic text COLLATE "C" NOT NULL CHECK (octet_length(topic) BETWEEN 1 AND 255),
  payload bytea NOT NULL CHECK (octet_length(payload) <= 1048576),
  payload_version integer NOT NULL CHECK (payload_version BETWEEN 1 AND 65535),
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(metadata) = 'object'
           AND octet_length(metadata::text) <= 131072
           AND NOT jsonb_path_exists(metadata, '$.* ? (@.type() != "string")')),
  ordering_key text COLLATE "C" NOT NULL DEFAULT '' CHECK (octet_length(ordering_key) <= 255),
  idempotency_key text COLLATE "C" NOT NULL DEFAULT '' CHECK (octet_length(idempotency_key) <= 255),
  state text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'delivered', 'dead')),
  claim_count integer NOT NULL DEFAULT 0 CHECK (claim_count BETWEEN 0 AND 1000000),
  failure_count integer NOT NULL DEFAULT 0 CHECK (failure_count BETWEEN 0 AND 10000),
  available_at timestamptz NOT NULL DEFAULT clock_timestamp()
    CHECK (available_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    CHECK (created_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
    CHECK (updated_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  lease_owner text COLLATE "C" CHECK (octet_length(lease_owner) BETWEEN 1 AND 255),
  lease_token uuid,
  leased_until timestamptz
    CHECK (leased_until BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  delivered_at timestamptz
    CHECK (delivered_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  dead_lettered_at timestamptz
    CHECK (dead_lettered_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  last_error_code text COLLATE "C" CHECK (last_error_code ~ '^[a-z0-9_.]{1,64}$'),
  last_error text COLLATE "C" CHECK (octet_length(last_error) <= 4096),
  CONSTRAINT "{{outbox_raw}}_pkey" PRIMARY KEY (id),
  CONSTRAINT "{{outbox_raw}}_seq_key" UNIQUE (seq),
  CONSTRAINT "{{outbox_raw}}_error_chk" CHECK ((last_error_code IS NULL) = (last_error IS NULL)),
  -- The nullable columns follow the state; no other shape is storable.
  CONSTRAINT "{{outbox_raw}}_state_chk" CHECK (
    (state = 'pending' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NULL)
    OR (state = 'leased' AND lease_owner IS NOT NULL AND lease_token IS NOT NULL AND leased_until IS NOT NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NULL)
    OR (state = 'delivered' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NOT NULL AND dead_lettered_at IS NULL)
    OR (state = 'dead' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NOT NULL))
);

CREATE INDEX "{{outbox_raw}}_claim_idx" ON {{s}}{{outbox}} (available_at, xact_id, seq) WHERE state = 'pending';
CREATE INDEX "{{outbox_raw}}_expiry_idx" ON {{s}}{{outbox}} (leased_until) WHERE state = 'leased';
CREATE INDEX "{{outbox_raw}}_order_idx" ON {{s}}{{outbox}} (ordering_key, xact_id, seq)
  WHERE state IN ('pending', 'leased') AND ordering_key <> '';
CREATE INDEX "{{outbox_raw}}_topic_idx" ON {{s}}{{outbox}} (topic, xact_id, seq) WHERE state IN ('pending', 'leased');
CREATE UNIQUE INDEX "{{outbox_raw}}_idem_key" ON {{s}}{{outbox}} (idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX "{{outbox_raw}}_pending_idx" ON {{s}}{{outbox}} (created_at, id) WHERE state = 'pending';
CREATE INDEX "{{outbox_raw}}_created_idx" ON {{s}}{{outbox}} (created_at, id);
CREATE INDEX "{{outbox_raw}}_dlv_idx" ON {{s}}{{outbox}} (delivered_at, id) WHERE state = 'delivered';
CREATE INDEX "{{outbox_raw}}_dead_idx" ON {{s}}{{outbox}} (dead_lettered_at, id) WHERE state = 'dead';

-- The replay audit: which outbox table (qualified), which rows, who and why.
-- No foreign key, so it outlives pruning.
CREATE TABLE IF NOT EXISTS {{s}}{{outbox_audit}} (
  replay_id uuid NOT NULL,
  outbox_table text COLLATE "C" NOT NULL CHECK (octet_length(outbox_table) BETWEEN 3 AND 127),
  message_id text COLLATE "C" NOT NULL CHECK (octet_length(message_id) BETWEEN 1 AND 255),
  previous_state text COLLATE "C" NOT NULL CHECK (previous_state IN ('delivered', 'dead')),
  requested_by text COLLATE "C" NOT NULL CHECK (octet_length(requested_by) BETWEEN 1 AND 255),
  reason text COLLATE "C" NOT NULL CHECK (octet_length(reason) BETWEEN 1 AND 4096),
  requested_at timestamptz NOT NULL
    CHECK (requested_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  available_at timestamptz NOT NULL
    CHECK (available_at BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
  CONSTRAINT "{{outbox_raw}}_audit_pk" PRIMARY KEY (outbox_table, replay_id, message_id)
);
CREATE INDEX IF NOT EXISTS "{{outbox_raw}}_audit_idx" ON {{s}}{{outbox_audit}} (outbox_table, requested_at, replay_id);

-- Audit history is append-only: removing it is a deliberate operator act
-- (disable the triggers first).
CREATE OR REPLACE FUNCTION {{s}}"{{outbox_raw}}_audit_ro"() RETURNS trigger LANGUAGE plpgsql AS $ro$
BEGIN
  RAISE EXCEPTION 'the outbox replay audit is append-only' USING ERRCODE = '42501';
END
$ro$;
CREATE TRIGGER "{{outbox_raw}}_audit_ro" BEFORE UPDATE OR DELETE ON {{s}}{{outbox_audit}}
  FOR EACH ROW EXECUTE FUNCTION {{s}}"{{outbox_raw}}_audit_ro"();
CREATE TRIGGER "{{outbox_raw}}_audit_rt" BEFORE TRUNCATE ON {{s}}{{outbox_audit}}
  FOR EACH STATEMENT EXECUTE FUNCTION {{s}}"{{outbox_raw}}_audit_ro"();
-- spool:down
DROP TABLE IF EXISTS {{s}}{{outbox_audit}};
DROP FUNCTION IF EXISTS {{s}}"{{outbox_raw}}_audit_ro"();
DROP TABLE IF EXISTS {{s}}{{outbox}};
