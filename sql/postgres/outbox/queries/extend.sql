-- T4, fenced: only the current, unexpired lease moves its deadline; an
-- expired lease is never revived. $1 ids, $2 tokens (text[]), $3 duration µs.
UPDATE {{t}} q
SET leased_until = clock_timestamp() + $3::bigint * interval '1 microsecond', updated_at = clock_timestamp()
FROM unnest($1::text[], $2::text[]) AS r(id, token)
WHERE q.id = r.id AND q.state = 'leased' AND q.lease_token::text = r.token AND q.leased_until > clock_timestamp()
RETURNING q.id, US[q.leased_until]
