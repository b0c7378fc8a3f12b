DELETE FROM queue_messages_failed WHERE queue_name = ?1 AND id = ?2
