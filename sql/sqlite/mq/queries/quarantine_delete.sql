-- Quarantine step 2: remove the live row.
DELETE FROM queue_messages WHERE queue_name = ?1 AND id = ?2 AND receipt_handle = ?3
