-- Replay: ALL audit rows in one statement, before T9 (previous states are
-- still stored). ?1 ids (JSON), ?2 replay id, ?3 qualified outbox table,
-- ?4 requested_by, ?5 reason, ?6 now µs, ?7 available_at µs.
INSERT INTO {{a}} (replay_id, outbox_table, message_id, previous_state, requested_by, reason, requested_at,
                   available_at)
SELECT ?2, ?3, id, state, ?4, ?5, ?6, ?7 FROM {{t}}
WHERE id IN (SELECT value FROM json_each(?1)) AND state IN ('delivered', 'dead')
