-- The columns of the op table ?1, for the schema check (op-queue.md §2.3).
SELECT name, type FROM pragma_table_info(?1)
