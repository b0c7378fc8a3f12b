-- A cutoff given as an age: database now minus $1 µs, as epoch µs.
SELECT US[(clock_timestamp() - $1::bigint * interval '1 microsecond')]
