-- Entries whose name starts with $1, after the name $2, in name order, at most $3.
SELECT name, account, attributes, tags, created_at, modified_at
FROM {{s}}spool_mq_queues
WHERE substr(name, 1, length($1::text)) = $1::text AND name > $2::text
ORDER BY name
LIMIT $3
