#!/usr/bin/env bash
# What the dashboard's browser test needs: Debian's Chromium (installed with
# apt when missing and this is root, as on CI) and playwright-core from the
# npm registry, pinned by test/browser/package-lock.json.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v chromium >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "browser-tools: chromium is missing; install Debian's chromium package (as root: apt-get install chromium)" >&2
    exit 1
  fi
  echo "browser-tools: installing chromium"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null || {
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  }
fi
cd "$root/test/browser"
want=$(node -p "require('./package.json').dependencies['playwright-core']")
have=$(node -p "require('./node_modules/playwright-core/package.json').version" 2>/dev/null || true)
if [[ "$have" != "$want" ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
