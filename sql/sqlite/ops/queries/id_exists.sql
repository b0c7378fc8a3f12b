-- Is the id ?1 taken? Checked in the insert's write transaction, so an item
-- whose id is stored is skipped and reported (already_exists) by itself.
SELECT 1 FROM {{ops}} WHERE id = ?1
