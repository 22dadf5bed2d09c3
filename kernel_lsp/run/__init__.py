"""The processes that run checks and the parent's side of them: executors, the wire protocol, the sandbox,
and one module per `python -m` entry (child, zygote, serve, reaper, compile_warmer)."""
