INSERT INTO floor_q (payload) SELECT repeat('x', :pad) FROM generate_series(1, 100);
