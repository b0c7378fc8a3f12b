-- extend_leases: lock the rows by id (in id order, so concurrent renewals
-- cannot deadlock) before "now" is read. $1 ids (text[]).
SELECT 1 FROM {{t}} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
