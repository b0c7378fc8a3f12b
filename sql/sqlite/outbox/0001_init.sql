-- outbox/1 on SQLite (outbox.md §3.2–§3.4): STRICT tables, times as INTEGER
-- microseconds since the Unix epoch, the position is seq. Templated like the
-- PostgreSQL file ({{outbox}}, {{outbox_audit}}, {{outbox_raw}}).
-- Released: never edit; every change is a new version.
-- spool:up
CREATE TABLE IF NOT EXISTS spool_schema_migrations (
  component TEXT NOT NULL,
  target TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (component, target, version)
);

CREATE TABLE {{outbox}} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE CHECK (length(CAST(id AS BLOB)) BETWEEN 1 AND 255),
  topic TEXT NOT NULL CHECK (length(CAST(topic AS BLOB)) BETWEEN 1 AND 255),
  payload BLOB NOT NULL CHECK (length(payload) <= 1048576),
  payload_version INTEGER NOT NULL CHECK (payload_version BETWEEN 1 AND 65535),
  metadata TEXT NOT NULL DEFAULT '{}'
    CHECK (json_valid(metadata) AND json_type(metadata) = 'object' AND length(CAST(metadata AS BLOB)) <= 131072),
  ordering_key TEXT NOT NULL DEFAULT '' CHECK (length(CAST(ordering_key AS BLOB)) <= 255),
  idempotency_key TEXT NOT NULL DEFAULT '' CHECK (length(CAST(idempotency_key AS BLOB)) <= 255),
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'delivered', 'dead')),
  claim_count INTEGER NOT NULL DEFAULT 0 CHECK (claim_count BETWEEN 0 AND 1000000),
  failure_count INTEGER NOT NULL DEFAULT 0 CHECK (failure_count BETWEEN 0 AND 10000),
  available_at INTEGER NOT NULL CHECK (available_at BETWEEN -62135596800000000 AND 253402300799999999),
  created_at INTEGER NOT NULL CHECK (created_at BETWEEN -62135596800000000 AND 253402300799999999),
  updated_at INTEGER NOT NULL CHECK (updated_at BETWEEN -62135596800000000 AND 253402300799999999),
  lease_owner TEXT CHECK (length(CAST(lease_owner AS BLOB)) BETWEEN 1 AND 255),
  lease_token TEXT CHECK (length(lease_token) = 36),
  leased_until INTEGER CHECK (leased_until BETWEEN -62135596800000000 AND 253402300799999999),
  delivered_at INTEGER CHECK (delivered_at BETWEEN -62135596800000000 AND 253402300799999999),
  dead_lettered_at INTEGER CHECK (dead_lettered_at BETWEEN -62135596800000000 AND 253402300799999999),
  last_error_code TEXT CHECK (length(last_error_code) BETWEEN 1 AND 64
                              AND last_error_code NOT GLOB '*[^a-z0-9_.]*'),
  last_error TEXT CHECK (length(CAST(last_error AS BLOB)) <= 4096),
  CHECK ((last_error_code IS NULL) = (last_error IS NULL)),
  -- The nullable columns follow the state; no other shape is storable.
  CHECK (
    (state = 'pending' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NULL)
    OR (state = 'leased' AND lease_owner IS NOT NULL AND lease_token IS NOT NULL AND leased_until IS NOT NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NULL)
    OR (state = 'delivered' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NOT NULL AND dead_lettered_at IS NULL)
    OR (state = 'dead' AND lease_owner IS NULL AND lease_token IS NULL AND leased_until IS NULL
       AND delivered_at IS NULL AND dead_lettered_at IS NOT NULL))
) STRICT;

-- SQLite checks cannot hold subqueries: metadata values must be strings.
CREATE TRIGGER "{{outbox_raw}}_meta_ins" BEFORE INSERT ON {{outbox}}
  WHEN json_valid(NEW.metadata) AND EXISTS (SELECT 1 FROM json_each(NEW.metadata) WHERE type <> 'text')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: outbox metadata values must be strings');
END;
CREATE TRIGGER "{{outbox_raw}}_meta_upd" BEFORE UPDATE OF metadata ON {{outbox}}
  WHEN json_valid(NEW.metadata) AND EXISTS (SELECT 1 FROM json_each(NEW.metadata) WHERE type <> 'text')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: outbox metadata values must be strings');
END;

CREATE INDEX "{{outbox_raw}}_claim_idx" ON {{outbox}} (available_at, seq) WHERE state = 'pending';
CREATE INDEX "{{outbox_raw}}_expiry_idx" ON {{outbox}} (leased_until) WHERE state = 'leased';
CREATE INDEX "{{outbox_raw}}_order_idx" ON {{outbox}} (ordering_key, seq)
  WHERE state IN ('pending', 'leased') AND ordering_key <> '';
CREATE INDEX "{{outbox_raw}}_topic_idx" ON {{outbox}} (topic, seq) WHERE state IN ('pending', 'leased');
CREATE UNIQUE INDEX "{{outbox_raw}}_idem_key" ON {{outbox}} (idempotency_key) WHERE idempotency_key <> '';
CREATE INDEX "{{outbox_raw}}_pending_idx" ON {{outbox}} (created_at, id) WHERE state = 'pending';
CREATE INDEX "{{outbox_raw}}_created_idx" ON {{outbox}} (created_at, id);
CREATE INDEX "{{outbox_raw}}_dlv_idx" ON {{outbox}} (delivered_at, id) WHERE state = 'delivered';
CREATE INDEX "{{outbox_raw}}_dead_idx" ON {{outbox}} (dead_lettered_at, id) WHERE state = 'dead';

CREATE TABLE IF NOT EXISTS {{outbox_audit}} (
  replay_id TEXT NOT NULL CHECK (length(replay_id) = 36),
  outbox_table TEXT NOT NULL CHECK (length(CAST(outbox_table AS BLOB)) BETWEEN 3 AND 127),
  message_id TEXT NOT NULL CHECK (length(CAST(message_id AS BLOB)) BETWEEN 1 AND 255),
  previous_state TEXT NOT NULL CHECK (previous_state IN ('delivered', 'dead')),
  requested_by TEXT NOT NULL CHECK (length(CAST(requested_by AS BLOB)) BETWEEN 1 AND 255),
  reason TEXT NOT NULL CHECK (length(CAST(reason AS BLOB)) BETWEEN 1 AND 4096),
  requested_at INTEGER NOT NULL CHECK (requested_at BETWEEN -62135596800000000 AND 253402300799999999),
  available_at INTEGER NOT NULL CHECK (available_at BETWEEN -62135596800000000 AND 253402300799999999),
  PRIMARY KEY (outbox_table, replay_id, message_id)
) STRICT;
CREATE INDEX IF NOT EXISTS "{{outbox_raw}}_audit_idx" ON {{outbox_audit}} (outbox_table, requested_at, replay_id);
CREATE TRIGGER IF NOT EXISTS "{{outbox_raw}}_audit_ro_u" BEFORE UPDATE ON {{outbox_audit}}
BEGIN
  SELECT RAISE(ABORT, 'the outbox replay audit is append-only');
END;
CREATE TRIGGER IF NOT EXISTS "{{outbox_raw}}_audit_ro_d" BEFORE DELETE ON {{outbox_audit}}
BEGIN
  SELECT RAISE(ABORT, 'the outbox replay audit is append-only');
END;
-- spool:down
DROP TABLE IF EXISTS {{outbox_audit}};
DROP TABLE IF EXISTS {{outbox}};
