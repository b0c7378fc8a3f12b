-- True when the client can decode row m (outbox/rows.cpp decode_row), so a
-- claim may lease it. The schema's CHECK constraints already hold every part
-- of this; it matters only after manual edits that dropped them
-- (outbox.md §6.1 step 6): a claim then dead-letters the row in its own
-- transaction instead of leasing it. Keep in step with decode_row.
(m.payload_version BETWEEN 1 AND 65535
 AND m.failure_count IS NOT NULL
 AND m.available_at IS NOT NULL
 AND (m.metadata IS NULL
      OR (jsonb_typeof(m.metadata) = 'object'
          AND NOT jsonb_path_exists(m.metadata, '$.* ? (@.type() != "string")')))) IS TRUE
