-- Creates a queue's catalog entry unless the name is taken; returns the name when created.
INSERT INTO {{s}}spool_mq_queues (name, account, attributes, tags, created_at, modified_at)
VALUES ($1, $2, $3, $4, $5, $5)
ON CONFLICT (name) DO NOTHING
RETURNING name
