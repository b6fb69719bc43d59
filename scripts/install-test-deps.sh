#!/usr/bin/env bash
# Installs what the tests drive as real programs, only when missing:
# Debian's chromium (the HTML report is checked in headless Chromium) and
# tmux (the full-screen live view is driven in a real terminal).
set -euo pipefail
need=()
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
    need+=(chromium fonts-dejavu-core)
fi
command -v tmux >/dev/null 2>&1 || need+=(tmux)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
