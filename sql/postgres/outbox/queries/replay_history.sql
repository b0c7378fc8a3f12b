-- The replay audit of one envelope (§6.4), newest first. The audit has no
-- foreign key, so the history outlives the row's prune. $1 qualified outbox
-- table, $2 id, $3 limit.
SELECT replay_id::text, message_id, previous_state, requested_by, reason, US[requested_at], US[available_at]
FROM {{a}}
WHERE outbox_table = $1 AND message_id = $2
ORDER BY requested_at DESC, replay_id DESC
LIMIT $3
