INSERT INTO mqn (queue_id, seq, id, message_group_id, receipt, visible_at, created_at, receive_count, payload)
SELECT 1, nextval('proto_seq'), '0193a' || lpad(to_hex(nextval('proto_idgen')), 31, '0'), NULL, NULL, c.now, c.now, 0, repeat('x', :pad)
FROM generate_series(1, 100), (SELECT floor(extract(epoch FROM now()))::bigint AS now) c RETURNING id;
