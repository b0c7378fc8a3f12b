-- Writer (outbox.md §5), notify off: the insert alone (fragments/insert_rows.sql).
{{insert_rows}}
