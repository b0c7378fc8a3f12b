-- Takes a message off its queue for a move, when ?3 still holds it (empty: any state).
DELETE FROM queue_messages
WHERE queue_name = ?1 AND id = ?2 AND (?3 = '' OR receipt_handle = ?3)
RETURNING id, message_group_id, payload, created_at
