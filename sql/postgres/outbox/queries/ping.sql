-- Ping (§6.6): a round trip plus the writability check.
SELECT current_setting('transaction_read_only') = 'off' AND NOT pg_is_in_recovery()
