#!/usr/bin/env bash
# install-deps.sh — installs the Debian 12 packages Spool needs to build, test and run.
# Idempotent and silent when everything is present: it asks dpkg which packages are missing and
# only then runs apt-get (through sudo when not root). Prints one line when it installs something.
#   install-deps.sh          what builds, tests and runs Spool, and the test clients (browsers, AWS CLIs)
#   install-deps.sh --build  only what builds and runs Spool (`make run` needs no browser)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache
  libpq-dev postgresql-15 postgresql-client-15
  libsqlite3-dev sqlite3
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libpqxx-dev libhowardhinnant-date-dev libcpp-httplib-dev
  tzdata libssl-dev
  faketime
  clang libclang-rt-14-dev
  jq openssl
)
# The real clients the tests drive: the AWS SDK and CLI, and two browsers for the console.
TEST_CLIENTS=(
  python3-boto3 awscli
  chromium firefox-esr
)
case "${1:-}" in
  --build) ;;
  "") PACKAGES+=("${TEST_CLIENTS[@]}") ;;
  *) echo "usage: install-deps.sh [--build]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 ||
    { echo "install-deps.sh: missing packages (${missing[*]}) and not root, no sudo: install them as root" >&2; exit 1; }
  sudo=(sudo)
fi

echo "install-deps.sh: installing ${missing[*]}"
log=$(mktemp "${TMPDIR:-/tmp}/spool-install-deps.XXXXXX")
trap 'rm -f "$log"' EXIT
if ! { "${sudo[@]}" apt-get update -qq &&
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
  >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-deps.sh: apt-get failed installing: ${missing[*]}" >&2
  exit 1
fi
