-- Resolving an in_doubt transition (outbox.md §7 rule 7): the row's state and
-- whether the given token still holds its lease. No lock: a plain read of the
-- committed row is the answer. $1 id, $2 token.
SELECT state, coalesce(lease_token::text = $2, false) FROM {{t}} WHERE id = $1
