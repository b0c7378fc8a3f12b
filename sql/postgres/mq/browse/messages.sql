-- One page of a queue's messages in id order, strictly after the cursor $2,
-- on the primary key (queue_name, id), so a page holds steady while rows
-- change. Filters: group $3 (NULL: any), state $4 ('' any, visible,
-- in_flight, delayed) at time $8, id prefix $5, created at or before $6.
SELECT id, message_group_id, receipt_handle IS NOT NULL, visible_at, created_at, coalesce(receive_count, 0),
       left(payload, 240), octet_length(payload)
FROM {{s}}queue_messages
WHERE queue_name = $1 AND id > $2 AND id >= $5 AND left(id, length($5)) = $5
  AND ($3::text IS NULL OR message_group_id = $3::text)
  AND ($4 = '' OR ($4 = 'visible' AND receipt_handle IS NULL AND visible_at <= $8)
       OR ($4 = 'in_flight' AND receipt_handle IS NOT NULL)
       OR ($4 = 'delayed' AND receipt_handle IS NULL AND visible_at > $8))
  AND created_at <= $6
ORDER BY id
LIMIT $7
