-- ack_batch (I8): one statement; returns the receipts that deleted a row.
DELETE FROM {{s}}queue_messages q
USING unnest($2::text[], $3::text[]) AS r(id, receipt)
WHERE q.queue_name = $1 AND q.id = r.id AND q.receipt_handle = r.receipt
RETURNING q.receipt_handle
