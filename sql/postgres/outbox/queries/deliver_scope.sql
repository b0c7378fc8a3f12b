-- mark_delivered_and_claim_next (§6.2): the delivered row's scope values and
-- the lease's owner, read after the row lock and before T5. $1 id.
SELECT ordering_key, topic, lease_owner FROM {{t}} WHERE id = $1
