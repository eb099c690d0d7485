#!/usr/bin/env bash
# What the browser tests need beyond the Python environment: Debian's `chromium` at
# /usr/bin/chromium (driven by the Python `playwright` package from the dev extra, with
# executable_path="/usr/bin/chromium"; never `playwright install`, which downloads its own).
# Safe to run again: it only installs what is missing. Without root or apt it says so and
# returns 0; the browser tests then skip with that reason.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "[browser_deps] chromium ready: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "[browser_deps] no apt-get here: install chromium yourself; browser tests will skip"
  exit 0
fi
sudo=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "[browser_deps] not root and no sudo: apt-get install chromium yourself; browser tests will skip"
    exit 0
  fi
fi
echo "[browser_deps] installing Debian chromium (apt, about a minute)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "[browser_deps] chromium ready: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
