"""Worker subprocesses: the only place user code and LLM code run."""
