#!/usr/bin/env bash
# Installs Debian's chromium when no headless browser is on PATH, for the
# HTML report's browser test (crates/goodput-report/tests/browser.rs).
# Idempotent: does nothing when one is already there.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
        echo "found $(command -v "$b")"
        exit 0
    fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core
command -v chromium
