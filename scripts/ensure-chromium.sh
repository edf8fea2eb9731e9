#!/usr/bin/env bash
# The browser tests (tests/browser) drive a headless Chromium. Use the one there is;
# otherwise install Debian's `chromium` with apt-get when we are root. Never fails:
# without a browser those tests skip and say why (the reason is also printed here).
set -uo pipefail

found=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$found" ]; then
  echo "chromium: $("$found" --version 2>/dev/null | head -n1)"
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found: installing Debian's chromium with apt-get (for tests/browser)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } 2>&1 | tail -n 3
  found=$(command -v chromium || true)
fi

if [ -n "$found" ]; then
  echo "chromium: $("$found" --version 2>/dev/null | head -n1)"
else
  echo "warning: no chromium (not root, no apt-get, or the install failed): the browser tests will be skipped" >&2
fi
exit 0
