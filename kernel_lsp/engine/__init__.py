"""The engine: pure stages (discover, link, compile, verify) with typed results; no LSP, no printing."""
