-- The SET of every claim (T2/T3 with a fresh token per row; outbox.md §6.1).
-- Candidate c carries ok, the decodable predicate
-- (fragments/decodable.sql) for its row: a row that cannot be
-- decoded is dead-lettered here with code 'undecodable' instead (step 6),
-- and the client leaves it out by its state.
SET state = CASE WHEN c.ok THEN 'leased' ELSE 'dead' END,
    lease_owner = CASE WHEN c.ok THEN $1::text END,
    lease_token = CASE WHEN c.ok THEN gen_random_uuid() END,
    leased_until = CASE WHEN c.ok THEN clock.now + $3::bigint * interval '1 microsecond' END,
    claim_count = LEAST(q.claim_count + 1, 1000000),
    failure_count = CASE WHEN c.ok THEN q.failure_count ELSE LEAST(COALESCE(q.failure_count, 0) + 1, 10000) END,
    dead_lettered_at = CASE WHEN c.ok THEN q.dead_lettered_at ELSE clock.now END,
    last_error_code = CASE WHEN c.ok THEN q.last_error_code ELSE 'undecodable' END,
    last_error = CASE WHEN c.ok THEN q.last_error ELSE 'the stored row could not be decoded' END,
    updated_at = clock.now
