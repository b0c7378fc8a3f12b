-- Puts a moved message on its new queue, visible at once; an id already there wins.
INSERT INTO {{s}}queue_messages
  (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
VALUES ($1, $2, $3, NULL, floor(extract(epoch FROM now()))::bigint, $4, $5, 0)
ON CONFLICT (queue_name, id) DO NOTHING
