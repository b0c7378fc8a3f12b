// Compiles against spool/pg_native.hpp through spool::pg_native, and checks
// that adopting a connection outside a transaction block is refused.
#include <spool/error.hpp>
#include <spool/pg_native.hpp>

#include <cstdio>

int main() {
  try {
    (void)spool::pg::adopt(nullptr);
  } catch (const spool::error& e) {
    if (e.code() == spool::errc::invalid_argument) {
      std::puts("pg_native consumer: OK");
      return 0;
    }
  }
  return 1;
}
