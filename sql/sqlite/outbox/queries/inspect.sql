-- Inspect (§6.3): keyset pagination by (created_at, id) descending, strictly
-- before the cursor; never selects payload, metadata or the lease token.
-- ?1 state or NULL, ?2 topic or NULL, ?3 cursor created_at µs or NULL, ?4 cursor id, ?5 limit,
-- ?6 ordering key or NULL, ?7 id prefix or NULL (a leading substring, never a
-- LIKE pattern), ?8 minimum age µs or NULL, ?9 host now µs.
SELECT seq, '0', id, topic, payload_version, ordering_key, idempotency_key, state, claim_count, failure_count,
       available_at, created_at, updated_at, lease_owner, leased_until, delivered_at, dead_lettered_at,
       last_error_code, last_error
FROM {{t}}
WHERE (?1 IS NULL OR state = ?1)
  AND (?2 IS NULL OR topic = ?2)
  AND (?3 IS NULL OR (created_at, id) < (?3, ?4))
  AND (?6 IS NULL OR ordering_key = ?6)
  AND (?7 IS NULL OR substr(id, 1, length(?7)) = ?7)
  AND (?8 IS NULL OR created_at <= ?9 - ?8)
ORDER BY created_at DESC, id DESC
LIMIT ?5
