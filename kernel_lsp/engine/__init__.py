"""The engine: the stages, pure of any front end (no LSP, no printing, no worker or cache).

Parent side, reading files only: discover (kernels by AST), link (the PyTorch reference), deps (workspace
imports). Worker side, running user code: pipeline (load, capture, compile, verify), with loader, capture,
compile, verify and rules, variants, compare, guards and positions under it. Every stage result is a typed
record from kernel_lsp.model, sent through a kernel_lsp.jobs.Sink.
"""
