-- Writer: which of the ids (JSON array ?1) the INSERT left out are stored (duplicate_id).
SELECT id FROM {{t}} WHERE id IN (SELECT value FROM json_each(?1))
