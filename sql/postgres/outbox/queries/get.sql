-- One envelope (§6.3), whole: the operator's detail view. A plain read of the
-- committed row; the lease token is selected by {{cols}} but never leaves
-- the store. $1 id.
SELECT {{cols}} FROM {{t}} WHERE id = $1
