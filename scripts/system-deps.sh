#!/usr/bin/env bash
# Installs the system programs the test suite starts for real (the table in scripts/system-tools.mjs) with apt-get,
# when any is missing. One script for .ci/run and for `npm test` (scripts/ensure-install.mjs runs it as root), so
# a fresh machine and CI install the same packages the same way. Needs root, apt-get and Node.js.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t need < <(node scripts/system-tools.mjs --missing-packages)
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "Installing ${need[*]} needs root: run  sudo bash scripts/system-deps.sh" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "No apt-get here: install ${need[*]} (Debian package names) with this system's package manager." >&2
  exit 1
fi
echo "Installing system packages: ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
