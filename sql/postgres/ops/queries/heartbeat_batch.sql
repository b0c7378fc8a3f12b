-- One pool's heartbeats in one statement (op-queue.md §5.1): $1 ids, $2
-- tokens (parallel text[]). The predicate is the lease: only a row still
-- running under that token is refreshed; the caller reports the others lost.
UPDATE {{s}}{{ops}} AS o SET heartbeat_at = now()
FROM unnest($1::text[], $2::text[]) AS l(id, token)
WHERE o.id = l.id AND o.status = 'running' AND o.lease_token = l.token
RETURNING o.id, o.lease_token
