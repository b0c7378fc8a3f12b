-- Resolving an in_doubt transition (outbox.md §7 rule 7): the row's state and
-- whether the given token still holds its lease. ?1 id, ?2 token.
SELECT state, coalesce(lease_token = ?2, 0) FROM {{t}} WHERE id = ?1
