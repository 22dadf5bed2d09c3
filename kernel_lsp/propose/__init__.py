"""Proposers: code actions that change a kernel, gated by the verifier (docs/code-actions.md).

Parent side only: the model is asked over HTTP and every candidate runs in workers like any user file.
loop.py (the steps), edits.py (replies to minimal edits), screen.py (what a candidate may not do), prompt.py
(what the model is shown), llm.py (the endpoint and the budget), tune.py (launch-literal search, no LLM).
"""
