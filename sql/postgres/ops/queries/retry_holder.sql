-- The pending op that holds the dedup key of op $1 (another op than $1).
SELECT h.id FROM {{s}}{{ops}} h, {{s}}{{ops}} r
WHERE r.id = $1::text AND h.dedup_key = r.dedup_key AND h.status = 'pending' AND h.id <> r.id
