// spool_outbox_bench — the named benchmark workloads (W1–W4, backlog, held, runtime) of
// spool::outbox on the engine --db names; see workloads.hpp and docs/BENCHMARKS.md.
#include "bench_main.hpp"

int main(int argc, char** argv) { return spool::bench::program_main(argc, argv, "outbox"); }
