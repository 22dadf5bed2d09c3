"""Output formats for `kernel-lsp check`: text (like ruff), JSON and SARIF 2.1.0."""
