"""What a call of the implementation costs in crossing to its player and back (the wire, player/wire.py).

`python benchmarks/wire_cost.py [--mb 268] [--calls 5] [--json OUT]`, on a GPU: one real player (run/players.py,
in its sandbox) per setting, the implementation tests/fixtures/player/echo.py (it returns a copy of each input and
their sum), called with one float32 CUDA tensor of the given size. For each setting the median seconds per call of
the round trip (the input to the player, the copy back), and whether the values came back exact:
- `arena`: CUDA tensors through each side's device arena (devmem.py), the default where both sides can map it;
- `memfd`: through host memory (the wire's path on the CPU, and on a GPU where arenas cannot be made).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ECHO = ROOT / "tests" / "fixtures" / "player" / "echo.py"


def measure(setting: str, mb: float, calls: int) -> dict:
    import torch

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.player import wire
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer("cuda")
    try:
        if setting == "memfd":  # a player asked not to map device memory: everything through host memory
            sock = server._fork(SandboxOptions(), 120.0, devmem=False)
        else:
            sock = server.fork(SandboxOptions())
        offered = wire.lends_device(sock)
        player = Player(sock, "cuda")
        player.load(str(ECHO))
        impl = player.build("function", "echo")
        x = torch.randn(int(mb * (1 << 20) / 4), device="cuda")
        want = x.double().sum().item()
        times, exact = [], True
        for _ in range(calls + 1):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = impl(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            exact = exact and bool(torch.equal(out[0], x)) and abs(float(out[1]) - want) <= 1e-6 * abs(want) + 1e-6
        lends = wire.lends_device(sock)
        player.close()
        return {"setting": setting, "mb": mb, "player_offered_arena": offered, "arena_used": lends,
                "seconds_per_call": statistics.median(times[1:]), "first_call_s": times[0], "exact": exact}
    finally:
        server.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=268.0)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("wire_cost.py needs a GPU", file=sys.stderr)
        return 2
    from kernel_lsp.player import devmem
    rows = [measure(s, a.mb, a.calls) for s in ("arena", "memfd")]
    doc = {"gpu": torch.cuda.get_device_name(), "arena_here": devmem.unavailable(0) or "yes", "rows": rows}
    print(json.dumps(doc, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
