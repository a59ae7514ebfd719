#!/usr/bin/env bash
# Installs the browser demo's npm libraries (web/package-lock.json) with `npm ci`; installs
# Node.js and npm from Debian first when they are missing. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/../web"
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup-web: installing nodejs npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
if [ -d node_modules/@huggingface/tokenizers ] && [ -d node_modules/@huggingface/jinja ] \
  && [ -d node_modules/@mlc-ai/web-xgrammar ] \
  && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "setup-web: node_modules up to date"
  exit 0
fi
npm ci --silent --no-audit --no-fund
echo "setup-web: installed web/node_modules"
