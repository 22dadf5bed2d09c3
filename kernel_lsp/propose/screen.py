"""The static screen: what a candidate may not do, found by reading it (no subprocess, nothing imported or run).

A candidate is blocked before any worker sees it when it adds, compared with the file it was made from:
- process, network or thread machinery: subprocess, socket, multiprocessing, threading, ctypes, http, urllib,
  requests, importlib, `os.system` / `os.popen` / `os.exec*` / `os.spawn*` / `os.fork` / `os.kill`;
- file or environment writes: `open(...)` at all, `os.remove` and friends, `shutil`, `tempfile`, pathlib's
  `write_text` / `write_bytes` / `touch` / `unlink` / `open` and the like (a file written in one round must not
  become another round's reference), `io.open`, writes to `os.environ`;
- dynamic code: `eval`, `exec`, `compile`, `__import__`, `globals()` / `setattr` on modules;
- monkey-patching: assignments to attributes of torch, triton, time, numpy or the kernel-lsp modules, which could
  change what the verifier or the timer sees;
- extra CUDA streams or events (`torch.cuda.Stream`, `torch.cuda.stream`, `torch.cuda.set_stream`,
  `torch.cuda.Event`): work the caller's stream does not wait for.
What the user's own file already does is not held against a candidate: only what the candidate adds is screened.
"""

from __future__ import annotations

import ast

BLOCKED_MODULES = {"subprocess", "socket", "multiprocessing", "threading", "ctypes", "http", "urllib", "requests",
                   "importlib", "shutil", "pickle", "marshal", "signal", "pty", "asyncio", "concurrent", "tempfile"}
BLOCKED_CALLS = {"eval", "exec", "compile", "__import__", "open", "globals", "setattr", "delattr", "breakpoint",
                 "input"}
BLOCKED_OS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "remove", "unlink", "rmdir", "removedirs",
              "rename", "replace", "putenv", "unsetenv", "chmod", "chown", "symlink", "link", "truncate", "mkdir",
              "makedirs"}
FILE_METHODS = {"write_text", "write_bytes", "touch", "unlink", "rmdir", "mkdir", "symlink_to", "hardlink_to",
                "link_to", "open", "chmod", "lchmod"}
PATCHED_ROOTS = {"torch", "triton", "tl", "time", "np", "numpy", "F", "nn", "kernel_lsp", "os", "sys", "math"}
STREAMS = {"Stream", "stream", "set_stream", "Event", "ExternalStream"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def violations(source: str) -> set[str]:
    """What the source does that a candidate may not add, as short descriptions."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in BLOCKED_MODULES:
                    found.add(f"imports {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in BLOCKED_MODULES:
                found.add(f"imports from {node.module}")
            if node.module == "os":
                for a in node.names:
                    if a.name in BLOCKED_OS or a.name.startswith(("exec", "spawn")):
                        found.add(f"imports os.{a.name}")
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in BLOCKED_CALLS:
                found.add(f"calls {name}()")
            head, _, tail = name.rpartition(".")
            if head == "os" and (tail in BLOCKED_OS or tail.startswith(("exec", "spawn"))):
                found.add(f"calls {name}()")
            if head in ("io", "codecs", "os") and tail == "open":
                found.add(f"writes files (calls {name}())")
            elif isinstance(node.func, ast.Attribute) and tail in FILE_METHODS and head not in ("os", "torch", "tl"):
                found.add(f"writes files (calls .{tail}())")
            if head in ("torch.cuda", "cuda") and tail in STREAMS:
                found.add(f"uses {name}() (another CUDA stream or event)")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    name = _dotted(t)
                    if name.split(".")[0] in PATCHED_ROOTS:
                        found.add(f"assigns {name} (monkey-patching)")
                elif isinstance(t, ast.Subscript) and _dotted(t.value) == "os.environ":
                    found.add("writes os.environ")
    return found


def screen(original: str, candidate: str) -> list[str]:
    """What the candidate adds that is not allowed, sorted; empty when it passes."""
    return sorted(violations(candidate) - violations(original))
