-- extend_visibility (I9): keep the receipt, move the window.
UPDATE queue_messages SET visible_at = ?5 + ?4
WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
