-- One page of a queue's quarantined rows in id order, strictly after $2.
-- Filters: group $4 (NULL: any), id prefix $5, and $6 a substring of the
-- reason ('' any), both matched as plain text (no wildcards).
SELECT id, message_group_id, left(payload, 240), error_message, receive_count, created_at, failed_at,
       octet_length(payload)
FROM {{s}}queue_messages_failed
WHERE queue_name = $1 AND id > $2 AND id >= $5 AND left(id, length($5)) = $5
  AND ($4::text IS NULL OR message_group_id = $4::text)
  AND ($6 = '' OR strpos(error_message, $6) > 0)
ORDER BY id
LIMIT $3
