"""What a fresh player costs before the first verdict: `python benchmarks/player_start.py [--rounds 4] [--json OUT]`.

On the machine's device (a GPU when there is one, else the CPU interpreter): one player server (run/players.py),
then, per round, a player taken from it as a check takes one (`connector`), the task
tasks/Activation/gelu_triton.py loaded and its model built there, and the model called twice on its own inputs.
The seconds of each step: `fork` (the player's start: its fork, its CUDA context, the first exchange through device
arenas; zero where a spare was ready), `load` (import and build), `first_call` (Triton's per-process load of the
kernel and its launcher, the first CUDA work), `second_call` (a warm call). Round 0 warms the server and the disk
caches; the medians are over the rounds after it. With `--spares 0` no player is started ahead of need.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TASK = ROOT / "tasks" / "Activation" / "gelu_triton.py"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--spares", type=int, default=None, help="players kept started ahead of need (default: the server's)")
    ap.add_argument("--no-warm", action="store_true", help="players make no Triton launch of their own first")
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run import players

    started = time.perf_counter()
    server = players.PlayerServer(device)
    if a.spares is not None:
        server.spares = a.spares
    server.warm = not a.no_warm
    spares = server.spares
    players.install(server)
    connect = players.connector(SandboxOptions())
    rows = []
    try:
        server.ready()
        ready_s = time.perf_counter() - started
        n = 1 << 22 if device == "cuda" else 1 << 12
        x = torch.randn(n, device=device)
        for r in range(a.rounds + 1):
            row = {"round": r}
            t = time.perf_counter()
            player = Player(connect(device), device)
            row["fork"] = time.perf_counter() - t
            t = time.perf_counter()
            player.load(str(TASK))
            impl = player.build("kernelbench", "ModelNew")
            row["load"] = time.perf_counter() - t
            for name in ("first_call", "second_call"):
                t = time.perf_counter()
                out = impl(x)
                row[name] = time.perf_counter() - t
            row["exact"] = bool(torch.allclose(out, torch.nn.functional.gelu(x), atol=1e-5, rtol=1e-5))
            player.close()
            players.after_check(SandboxOptions())
            rows.append(row)
            # The next check comes later than a player's start takes (a save after an edit): wait for the spares.
            server.wait_for_spares(60)
    finally:
        server.close()
    later = rows[1:] or rows
    doc = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu (interpreter)",
           "server_ready_s": round(ready_s, 3), "spares": spares, "warm": server.warm,
           "median_s": {k: round(statistics.median(r[k] for r in later), 4)
                        for k in ("fork", "load", "first_call", "second_call")},
           "rows": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]}
    print(json.dumps(doc, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
