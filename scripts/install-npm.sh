#!/usr/bin/env bash
# install-npm.sh — installs the npm packages the tests' real clients need (tests/serve/js: the AWS SDK
# for JavaScript; tests/console: puppeteer-core, which drives Debian's chromium and downloads no
# browser), exactly as package-lock.json pins them (npm ci). Idempotent and silent when they are
# installed already; installs Debian's nodejs and npm first when the machine has no npm.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  echo "install-npm.sh: installing nodejs npm"
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

for dir in tests/serve/js tests/console; do
  stamp=$dir/node_modules/.package-lock.json
  if [[ -f $stamp && $stamp -nt $dir/package-lock.json ]]; then continue; fi
  echo "install-npm.sh: npm ci in $dir"
  log=$(mktemp "${TMPDIR:-/tmp}/spool-npm.XXXXXX")
  if ! (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "install-npm.sh: npm ci failed in $dir" >&2
    exit 1
  fi
  rm -f "$log"
done
