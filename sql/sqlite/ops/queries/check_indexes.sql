-- The indexes of the op table ?1, for the schema check.
SELECT name FROM pragma_index_list(?1)
