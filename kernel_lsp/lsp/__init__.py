"""The language server: the only package that knows LSP. It schedules engine runs and renders findings."""
