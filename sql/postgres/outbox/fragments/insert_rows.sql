-- Writer (outbox.md §5): the whole batch in ONE statement, in the caller's
-- transaction. ON CONFLICT DO NOTHING is the contract: a row meeting an
-- existing id or idempotency key (also one a concurrent transaction commits
-- while this waits) is left out instead of aborting the caller's
-- transaction; the writer classifies those rows with insert_existing.sql.
-- Unset times are the statement's start, one value for the batch; positions
-- follow batch order.
-- $1 ids, $2 topics, $3 payloads (hex), $4 versions, $5 metadata (JSON),
-- $6 ordering keys, $7 idempotency keys, $8 / $9 available_at / created_at
-- in epoch µs (NULL: unset). All text[] of equal length.
-- (The body of queries/insert.sql and queries/insert_notify.sql.)
INSERT INTO {{t}} (id, topic, payload, payload_version, metadata, ordering_key, idempotency_key,
                   available_at, created_at, updated_at)
SELECT i.id, i.topic, decode(i.payload, 'hex'), i.payload_version::integer, i.metadata::jsonb, i.ordering_key,
       i.idempotency_key, COALESCE(TS[i.available_us], statement_timestamp()),
       COALESCE(TS[i.created_us], statement_timestamp()), statement_timestamp()
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
       WITH ORDINALITY AS i(id, topic, payload, payload_version, metadata, ordering_key, idempotency_key,
                            available_us, created_us, n)
ORDER BY i.n
ON CONFLICT DO NOTHING
RETURNING id, US[available_at] AS available_us, US[created_at] AS created_us
