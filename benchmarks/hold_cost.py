"""What stopping the players' processes costs the measure stage: `python benchmarks/hold_cost.py [--device cpu|cuda]`.

A players' server and one player (tests/fixtures/player/echo.py), then `Player.stop` (the server stops every process
under it and waits until each is stopped) and `Player.go` (they run on) 200 times, each followed by a call of the
player's: the medians of the three, in microseconds. The measure stage pays a stop and a go per interleaving round
(checker/measure/sides.py `SplitClock.quiet`), outside the timed windows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    import torch

    from kernel_lsp.checker.player import Player
    from kernel_lsp.jobs import SandboxOptions
    from kernel_lsp.run.players import PlayerServer
    server = PlayerServer(args.device)
    try:
        player = Player(server.fork(SandboxOptions()), args.device)
        player.holder = server.hold
        player.load(str(ROOT / "tests" / "fixtures" / "player" / "echo.py"))
        echo = player.build("function", "echo")
        x = torch.ones(2, device=args.device)
        echo(x)
        stop, go, call = [], [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            player.stop()
            t1 = time.perf_counter()
            player.go()
            t2 = time.perf_counter()
            echo(x)
            t3 = time.perf_counter()
            stop.append(t1 - t0)
            go.append(t2 - t1)
            call.append(t3 - t2)
        player.close()
    finally:
        server.close()
    print(f"stop {statistics.median(stop) * 1e6:.0f} us, go {statistics.median(go) * 1e6:.0f} us, "
          f"a call {statistics.median(call) * 1e6:.0f} us (medians of {args.repeats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
