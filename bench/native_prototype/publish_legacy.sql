INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT '0193a' || lpad(to_hex(nextval('proto_idgen')), 31, '0'), 'bench', NULL, NULL, c.now, repeat('x', :pad), c.now, 0
FROM generate_series(1, 100), (SELECT floor(extract(epoch FROM now()))::bigint AS now) c RETURNING queue_name, id;
