-- extend_visibility (I9): keep the receipt, move the window to now + $4.
UPDATE {{s}}queue_messages
SET visible_at = floor(extract(epoch FROM now()))::bigint + $4::bigint
WHERE queue_name = $1 AND id = $2 AND receipt_handle = $3
