-- nack and defer (§5.4): release the claim, hidden until ?5 + ?4.
UPDATE queue_messages SET receipt_handle = NULL, visible_at = ?5 + ?4
WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
