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
  `torch.cuda.Event`): work the caller's stream does not wait for;
- reading the environment (`os.environ`, `os.getenv`), saving tensors to files (`torch.save`, `numpy.save`);
- line separators other than `\r\n`, `\r` and `\n`, and control characters, outside string literals: a U+2028 or a
  form feed in a comment makes one view of the file (`str.splitlines`) see other lines than the interpreter runs.
Names are resolved through the file's own imports (`import os as o; o.posix_spawn(...)`, `from os import system as
s`), so an alias is no way around it; an assignment into any imported module, `vars(m)[...] = ...` and
`m.__dict__[...] = ...` count as monkey-patching. This is a filter, fast and useful against an LLM's accidents and
obvious cheats, not the defence: the candidate runs in a player that holds nothing to bend (docs/verification.md,
"The player"), confined by the sandbox.
What the user's own file already does is not held against a candidate: only what the candidate adds is screened.
"""

from __future__ import annotations

import ast

from ..source.discover import dotted_name

BLOCKED_MODULES = {"subprocess", "socket", "multiprocessing", "threading", "ctypes", "http", "urllib", "requests",
                   "importlib", "shutil", "pickle", "marshal", "signal", "pty", "asyncio", "concurrent", "tempfile",
                   "_thread", "_posixsubprocess", "_socket", "posix", "mmap", "gc", "inspect", "faulthandler"}
BLOCKED_CALLS = {"eval", "exec", "compile", "__import__", "open", "globals", "setattr", "delattr", "breakpoint",
                 "input"}
BLOCKED_OS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "remove", "unlink", "rmdir", "removedirs",
              "rename", "replace", "putenv", "unsetenv", "chmod", "chown", "symlink", "link", "truncate", "mkdir",
              "makedirs", "posix_spawn", "posix_spawnp", "getenv", "getenvb", "environ", "environb"}
FILE_METHODS = {"write_text", "write_bytes", "touch", "unlink", "rmdir", "mkdir", "symlink_to", "hardlink_to",
                "link_to", "open", "chmod", "lchmod"}
PATCHED_ROOTS = {"torch", "triton", "tl", "time", "np", "numpy", "F", "nn", "kernel_lsp", "os", "sys", "math"}
STREAMS = {"Stream", "stream", "set_stream", "Event", "ExternalStream"}
SAVES = {"torch.save", "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "numpy.ndarray.tofile"}
# Characters the tokenizer does not end a line at but str.splitlines does, and other control characters (tab, the
# line endings themselves and form feed at a line's start are Python's own whitespace; form feed is still refused:
# splitlines breaks at it).
_STRAY = {chr(c) for c in range(32) if chr(c) not in "\t\n\r"} | {"\x7f", "\x85", "\u2028", "\u2029"}


def stray_characters(source: str) -> list[str]:
    """Control characters and line separators outside string literals, as `U+2028 on line 3`; empty when none."""
    import io
    import tokenize
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
    strings = [(t.start, t.end) for t in tokens if t.type == tokenize.STRING]
    for i, line in enumerate(source.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        for col, ch in enumerate(line):
            if ch in _STRAY and not any(s <= (i, col) < e for s, e in strings):
                found.append(f"U+{ord(ch):04X} on line {i}")
    return found


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the module or module member it stands for, from every import of the file."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _resolved(node: ast.AST, aliases: dict[str, str]) -> str:
    """`o.posix_spawn` with `import os as o` -> `os.posix_spawn`; `np.save` -> `numpy.save`."""
    name = dotted_name(node)
    head, _, rest = name.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return name


def violations(source: str) -> set[str]:
    """What the source does that a candidate may not add, as short descriptions."""
    found: set[str] = {f"holds a control character or line separator outside a string ({s})"
                       for s in stray_characters(source)[:3]}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    aliases = _aliases(tree)
    modules = {name for name, target in aliases.items() if "." not in target or target.split(".")[0] in
               ("os", "torch", "triton", "numpy")}
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
            name = _resolved(node.func, aliases)
            if name in BLOCKED_CALLS or name.rpartition(".")[2] in ("__import__",) or name == "builtins.open":
                found.add(f"calls {name}()")
            head, _, tail = name.rpartition(".")
            if head == "os" and (tail in BLOCKED_OS or tail.startswith(("exec", "spawn"))):
                found.add(f"calls {name}()")
            if head in ("io", "codecs", "os") and tail == "open":
                found.add(f"writes files (calls {name}())")
            elif isinstance(node.func, ast.Attribute) and tail in FILE_METHODS and head not in ("os", "torch", "tl"):
                found.add(f"writes files (calls .{tail}())")
            if name in SAVES:
                found.add(f"writes files (calls {name}())")
            if head in ("torch.cuda", "cuda") and tail in STREAMS:
                found.add(f"uses {name}() (another CUDA stream or event)")
        elif isinstance(node, ast.Attribute):
            if _resolved(node, aliases) in ("os.environ", "os.environb"):
                found.add("reads os.environ")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    name = dotted_name(t)
                    root = name.split(".")[0]
                    if root in PATCHED_ROOTS or root in modules:
                        found.add(f"assigns {_resolved(t, aliases)} (monkey-patching)")
                elif isinstance(t, ast.Subscript):
                    base = t.value
                    if _resolved(base, aliases) in ("os.environ", "os.environb"):
                        found.add("writes os.environ")
                    elif isinstance(base, ast.Call) and dotted_name(base.func) == "vars":
                        found.add("assigns into vars(...) (monkey-patching)")
                    elif isinstance(base, ast.Attribute) and base.attr == "__dict__":
                        found.add(f"assigns into {dotted_name(base)} (monkey-patching)")
    return found


def screen(original: str, candidate: str) -> list[str]:
    """What the candidate adds that is not allowed, sorted; empty when it passes."""
    return sorted(violations(candidate) - violations(original))
