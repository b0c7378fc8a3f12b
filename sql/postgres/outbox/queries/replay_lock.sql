-- Replay (§6.4): lock the requested rows (waiting at most lock_timeout) and
-- report each one's state; a missing id has no row. $1 ids (text[]).
SELECT id, state FROM {{t}} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
