-- Rewrites a claimed message's payload (an SQS member added), while ?3 still holds it.
UPDATE queue_messages SET payload = ?4
WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
