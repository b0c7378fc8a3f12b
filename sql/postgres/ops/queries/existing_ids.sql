-- Which of the ids $1 (text[]) are stored: the items of an enqueue that its
-- statement skipped for a taken id rather than for a held dedup key.
SELECT id FROM {{s}}{{ops}} WHERE id = ANY ($1::text[])
