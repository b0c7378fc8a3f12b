-- Ping (§6.6): a round trip plus the writability check (query_only off).
SELECT query_only FROM pragma_query_only
