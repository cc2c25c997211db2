#!/bin/sh
# Installs the browser tests' npm packages (puppeteer-core, as pinned by
# package-lock.json) into tests/browser/node_modules, when they are missing or
# the lock changed since the last install; does nothing otherwise. test.sh runs
# it before configuring, because tests/CMakeLists.txt registers the browser
# test only where node_modules exists. puppeteer-core downloads no browser: the
# tests drive Debian's chromium (install-deps.sh).
set -eu
cd "$(dirname "$0")"
stamp=node_modules/.ringprof-lock.sha256
lock="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock" ]; then
  exit 0
fi
echo "tests/browser: npm ci (package-lock.json changed or node_modules missing)"
npm ci --no-audit --no-fund
echo "$lock" >"$stamp"
