INSERT INTO mqu (seq, id, message_group_id, receipt, visible_at, created_at, receive_count, payload)
SELECT nextval('proto_seq'), lpad(to_hex(nextval('proto_idgen')), 32, '0')::uuid, NULL, NULL, c.now, c.now, 0, repeat('x', :pad)
FROM generate_series(1, 100), (SELECT floor(extract(epoch FROM now()))::bigint AS now) c RETURNING id;
