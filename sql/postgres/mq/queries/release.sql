-- nack and defer (§5.4): release the claim and hide the row for $4 seconds;
-- receive_count is unchanged.
UPDATE {{s}}queue_messages
SET receipt_handle = NULL, visible_at = floor(extract(epoch FROM now()))::bigint + $4::bigint
WHERE queue_name = $1 AND id = $2 AND receipt_handle = $3
