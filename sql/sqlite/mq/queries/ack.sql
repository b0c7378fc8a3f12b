-- Primary key plus receipt (I2): index-backed, no visibility check.
DELETE FROM queue_messages WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
