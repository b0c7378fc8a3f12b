#!/usr/bin/env bash
# run_install_test.sh SRC_DIR WORK_DIR [BUILD_DIR] — installs Spool into a scratch prefix and uses
# it from a separate project, the way a downstream user would:
#   1. install BUILD_DIR (a built tree of SRC_DIR; without it, SRC_DIR's library and CLI are
#      configured with the default prefix and built in WORK_DIR/build) with
#      `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`, a prefix the configure never saw;
#      P/bin/spool runs without LD_LIBRARY_PATH (RUNPATH $ORIGIN/../lib) and reports the version
#      and the source commit;
#   2. check that no public header drags in libpq-fe.h or sqlite3.h (only spool/pg_native.hpp may);
#   3. build tests/install/consumer with find_package(spool) and run it;
#   4. with libpqxx present, build and run the spool::outbox_pqxx consumer (pqxx_app.cpp);
#      without it, check that the adapter was not installed;
#   5. compile the same app.cpp with `pkg-config --cflags --libs spool` and run it: the paths are
#      P's (derived from the .pc file's place) and no dependency's compile definitions leak;
#   6. move the whole prefix elsewhere: the binary still runs and pkg-config follows it.
# WORK_DIR/build is kept between runs so a re-run only rebuilds what changed.
set -euo pipefail

PROG=run_install_test.sh
fail() {
  echo "$PROG: FAILED: $*" >&2
  exit 1
}
step() { echo "== $PROG: $*"; }

[[ $# -eq 2 || $# -eq 3 ]] || {
  echo "usage: $PROG SRC_DIR WORK_DIR [BUILD_DIR]" >&2
  exit 2
}
SRC=$(cd -- "$1" && pwd -P) || fail "no source directory $1"
mkdir -p -- "$2"
WORK=$(cd -- "$2" && pwd -P)
BUILD=${3:-$WORK/build}
PREFIX=$WORK/prefix
CONSUMER_SRC=$SRC/tests/install/consumer
CONSUMER_BUILD=$WORK/consumer-build
[[ -f $SRC/CMakeLists.txt ]] || fail "$SRC has no CMakeLists.txt"
[[ -f $CONSUMER_SRC/CMakeLists.txt ]] || fail "$CONSUMER_SRC has no CMakeLists.txt"

# Run from ctest under `make test`, we inherit the outer make's jobserver flags, which the inner
# builds cannot use; they get their own -j instead.
unset MAKEFLAGS MFLAGS MAKELEVEL
JOBS=${SPOOL_INSTALL_TEST_JOBS:-2}
CXX_BIN=${CXX:-c++}

if [[ $# -eq 2 ]]; then
  # A build tree configured from another checkout cannot be reused (CMake refuses the cache).
  if [[ -f $BUILD/CMakeCache.txt ]] &&
    ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC" "$BUILD/CMakeCache.txt"; then
    rm -rf -- "$BUILD"
  fi

  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi

  step "configure $SRC -> $BUILD"
  cmake -S "$SRC" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPOOL_BUILD_TESTS=OFF -DSPOOL_BUILD_BENCH=OFF -DSPOOL_BUILD_EXAMPLES=OFF -DSPOOL_BUILD_CLI=ON \
    -DSPOOL_SANITIZE=OFF -DCMAKE_INSTALL_LIBDIR=lib \
    "${launcher[@]}" >"$WORK/configure.log" 2>&1 ||
    { cat "$WORK/configure.log" >&2; fail "configuring the library failed (log above)"; }

  step "build"
  cmake --build "$BUILD" -j "$JOBS" || fail "building the library failed"
else
  [[ -f $BUILD/CMakeCache.txt ]] || fail "$BUILD is not a configured build tree"
  step "installing the build tree $BUILD"
fi

step "install -> $PREFIX"
rm -rf -- "$PREFIX"  # a fresh prefix, so a header removed from the tree cannot linger here
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 ||
  { cat "$WORK/install.log" >&2; fail "cmake --install failed (log above)"; }
[[ -f $PREFIX/lib/cmake/spool/spool-config.cmake ]] || fail "no spool-config.cmake under $PREFIX/lib/cmake/spool"
[[ -f $PREFIX/lib/pkgconfig/spool.pc ]] || fail "no spool.pc under $PREFIX/lib/pkgconfig"
[[ -d $PREFIX/include/spool ]] || fail "no headers under $PREFIX/include/spool"

step "installed binary: $PREFIX/bin/spool"
[[ -x $PREFIX/bin/spool ]] || fail "no $PREFIX/bin/spool"
runpath=$(readelf -d "$PREFIX/bin/spool" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[[ $runpath == '$ORIGIN/../lib' ]] || fail "bin/spool has RUNPATH '$runpath', want \$ORIGIN/../lib"
check_version() {  # the binary at $1 runs on its own and names the release and this checkout's commit
  local out want_commit
  out=$(env -u LD_LIBRARY_PATH "$1" --version) || fail "$1 --version failed"
  want_commit=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  [[ $out == "spool "*" (commit $want_commit"* ]] || fail "$1 --version printed '$out', want the commit $want_commit"
  echo "$out"
}
check_version "$PREFIX/bin/spool"

# The public API must not require libpq's or SQLite's headers: only the opt-in native-handle
# header may include them. No header includes cpp-httplib's.
step "check installed headers"
leaks=$(
  cd "$PREFIX/include"
  grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](libpq-fe|sqlite3)\.h[>"]' spool |
    grep -vxF spool/pg_native.hpp || true
)
[[ -z $leaks ]] || fail "installed headers include libpq-fe.h or sqlite3.h (only spool/pg_native.hpp may):
$leaks"
httplib_leaks=$(cd "$PREFIX/include" && grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]httplib\.h[>"]' spool || true)
[[ -z $httplib_leaks ]] || fail "installed headers include httplib.h (the webhook sink keeps it private):
$httplib_leaks"

step "consumer via find_package(spool)"
rm -rf -- "$CONSUMER_BUILD"
cmake -S "$CONSUMER_SRC" -B "$CONSUMER_BUILD" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$WORK/consumer-configure.log" 2>&1 ||
  { cat "$WORK/consumer-configure.log" >&2; fail "find_package(spool) consumer did not configure (log above)"; }
cmake --build "$CONSUMER_BUILD" -j "$JOBS" || fail "find_package(spool) consumer did not build"
# LD_LIBRARY_PATH as well as CMake's build RPATH, in case the RPATH is ever turned off.
LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$CONSUMER_BUILD/app" ||
  fail "find_package(spool) consumer ran but failed"
LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$CONSUMER_BUILD/native" ||
  fail "spool::pg_native consumer ran but failed"

# The libpqxx adapter: exported as spool::outbox_pqxx (with pqxx.hpp) exactly
# when libpqxx is found; the consumer builds pqxx_app against it then.
if pkg-config --exists libpqxx 2>/dev/null; then
  step "consumer via spool::outbox_pqxx (libpqxx $(pkg-config --modversion libpqxx))"
  [[ -f $PREFIX/include/spool/outbox/pqxx.hpp ]] || fail "libpqxx is present but spool/outbox/pqxx.hpp was not installed"
  [[ -f $PREFIX/lib/cmake/spool/spoolOutboxPqxxTargets.cmake ]] || fail "spool::outbox_pqxx was not exported"
  [[ -x $CONSUMER_BUILD/pqxx_app ]] || fail "the consumer did not build pqxx_app (spool::outbox_pqxx missing?)"
  LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$CONSUMER_BUILD/pqxx_app" ||
    fail "spool::outbox_pqxx consumer ran but failed"
else
  step "no libpqxx: spool::outbox_pqxx must not be installed"
  [[ ! -e $PREFIX/include/spool/outbox/pqxx.hpp ]] || fail "spool/outbox/pqxx.hpp installed without libpqxx"
fi

# pkg-config from the prefix at $1: its paths are $1's, its flags define nothing, and app.cpp
# built with them runs.
pkg_config_consumer() {
  local prefix=$1 pc_prefix pc_cflags pc_flags
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  pc_prefix=$(pkg-config --variable=prefix spool) || fail "pkg-config --variable=prefix spool failed"
  [[ $(realpath "$pc_prefix") == $(realpath "$prefix") ]] || fail "pkg-config's prefix is $pc_prefix, want $prefix"
  pc_cflags=$(pkg-config --cflags spool) || fail "pkg-config --cflags spool failed"
  [[ $pc_cflags != *-D* ]] || fail "pkg-config --cflags spool leaks compile definitions: $pc_cflags"
  pc_flags=$(pkg-config --cflags --libs spool) || fail "pkg-config --cflags --libs spool failed"
  echo "pkg-config: $pc_flags"
  # shellcheck disable=SC2086  # the flags are meant to split into words
  "$CXX_BIN" -std=c++20 -o "$WORK/app-pkgconfig" "$CONSUMER_SRC/app.cpp" $pc_flags ||
    fail "compiling app.cpp with pkg-config's flags failed"
  LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$WORK/app-pkgconfig" ||
    fail "pkg-config consumer ran but failed"
}
step "consumer via pkg-config"
pkg_config_consumer "$PREFIX"

step "the prefix moved elsewhere"
MOVED=$WORK/moved/prefix
rm -rf -- "$WORK/moved"
mkdir -p -- "$WORK/moved"
mv -- "$PREFIX" "$MOVED"
check_version "$MOVED/bin/spool"
pkg_config_consumer "$MOVED"

echo "$PROG: install test passed"
