-- ops/3: Spool's lease columns (op-queue.md §5) and the rescuer's partial
-- index. Nullable columns only, so every filex statement keeps working; a
-- claim by a filex worker leaves them NULL.
-- spool:up
ALTER TABLE {{s}}{{ops}}
  ADD COLUMN IF NOT EXISTS lease_owner TEXT,
  ADD COLUMN IF NOT EXISTS lease_token TEXT,
  ADD COLUMN IF NOT EXISTS heartbeat_at TIMESTAMPTZ;

CREATE INDEX IF NOT EXISTS "idx_{{ops_raw}}_running_heartbeat" ON {{s}}{{ops}} (heartbeat_at)
  WHERE status = 'running';
-- spool:down
DROP INDEX IF EXISTS {{s}}"idx_{{ops_raw}}_running_heartbeat";
ALTER TABLE {{s}}{{ops}}
  DROP COLUMN IF EXISTS heartbeat_at,
  DROP COLUMN IF EXISTS lease_token,
  DROP COLUMN IF EXISTS lease_owner;
