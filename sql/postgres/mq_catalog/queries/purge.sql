-- Deletes every message of a queue, claimed or not.
DELETE FROM {{s}}queue_messages WHERE queue_name = $1
