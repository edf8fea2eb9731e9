#!/usr/bin/env bash
# Spark 4 needs Java 17+. Use what is there; otherwise install a headless JDK
# with apt when we are root; otherwise stop with a message that says what to do.
set -euo pipefail

java_major() {
  local v
  v=$("$1" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
  v=${v#1.}
  echo "${v%%[.+-]*}"
}

find_java() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; return; fi
  command -v java 2>/dev/null || true
}

java_bin=$(find_java)
if [ -n "$java_bin" ] && [ "$(java_major "$java_bin")" -ge 17 ] 2>/dev/null; then
  echo "java: $("$java_bin" -version 2>&1 | head -n1)"
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Java 17+ not found: installing a headless JDK with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq openjdk-17-jre-headless >/dev/null 2>&1 \
    || apt-get install -y -qq default-jre-headless >/dev/null
  java_bin=$(command -v java)
  if [ "$(java_major "$java_bin")" -ge 17 ]; then
    echo "java: $("$java_bin" -version 2>&1 | head -n1)"
    exit 0
  fi
fi

echo "error: Spark 4 needs Java 17 or newer and none was found." >&2
echo "Install one (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2
exit 1
