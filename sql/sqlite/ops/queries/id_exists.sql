-- Is the id ?1 taken? Checked in the insert's write transaction, so a
-- primary-key conflict is reported as already_exists naming the item.
SELECT 1 FROM {{ops}} WHERE id = ?1
