-- Redrive --dry-run: what would move, and which ids collide with a live row.
SELECT f.id, NOT EXISTS (SELECT 1 FROM {{s}}queue_messages m WHERE m.queue_name = f.queue_name AND m.id = f.id)
FROM {{s}}queue_messages_failed f
WHERE f.queue_name = $1 AND ($2::text[] IS NULL OR f.id = ANY ($2::text[]))
ORDER BY f.failed_at, f.id
