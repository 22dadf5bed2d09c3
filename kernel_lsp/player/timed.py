"""The measure stage's timed calls of the implementation, in the player (checker/measure/sides.py drives them and
interleaves them with the baselines it times in its own process, by the same clock code: clock.py).

Per built model (a "side"), the checker sends its input copies once (`setup`), then asks for one timed call of a copy
(`once`), a back-to-back batch (`b2b`), a CUDA graph's replay (`graph`), plain calls (`call`, the warm-up), the last
timed call's outputs and the copies as the calls left them (`output`), or a call on a copy refilled with new values
(`refill`). Nothing here judges a number or an output.
"""

from __future__ import annotations

import dataclasses

import clock as clocks
from wire import flatten


class Side:
    def __init__(self, model, copies: list, clock):
        self.model, self.copies, self.clock = model, copies, clock
        self.fns = [lambda c=c: model(*c) for c in copies]
        self.last = None


def handle(player, req: dict) -> dict:
    import torch
    torch.set_grad_enabled(False)
    sides = player.__dict__.setdefault("timed_sides", {})
    do = req.get("do")
    if do == "setup":
        model = player.models.get(req.get("model"))
        if model is None:
            return {"error": {"type": "RuntimeError", "text": "no such model"}}
        clock = clocks.CudaClock(req.get("cache", "cold")) if player.device == "cuda" else clocks.HostClock()
        sides[req["model"]] = Side(model, [list(c) for c in req.get("copies") or []], clock)
        return {"ok": True, "l2_bytes": int(getattr(clock, "l2_bytes", 0) or 0)}
    side = sides.get(req.get("model"))
    if side is None:
        return {"error": {"type": "RuntimeError", "text": "no timed side"}}
    try:
        if do == "call":
            for _ in range(int(req.get("times", 1))):
                side.fns[int(req.get("copy", 0)) % len(side.fns)]()
            side.clock.sync()
            return {"ok": True}
        if do == "once":
            event_us, host_us, out = side.clock.time(side.fns[int(req.get("copy", 0)) % len(side.fns)])
            side.last = out
            return {"event_us": event_us, "host_us": host_us, "tail_us": getattr(side.clock, "last_tail_us", 0.0)}
        if do == "b2b":
            batch = side.clock.back_to_back(side.fns, int(req.get("calls", 24)), bool(req.get("issue", True)))
            return {"b2b": dataclasses.asdict(batch)}
        if do == "graph":
            return {"graph": clocks.time_graph(side.fns[0], side.clock)}
        if do == "output":
            copy = int(req.get("copy", 0)) % len(side.copies)
            return {"out": flatten(side.last), "args": side.copies[copy]}
        if do == "refill":
            copy = int(req.get("copy", 0)) % len(side.copies)
            buffers = side.copies[copy]
            for x, f in zip(buffers, req.get("values") or []):
                if isinstance(x, torch.Tensor) and isinstance(f, torch.Tensor):
                    x.copy_(f)
            given = [x.clone() if isinstance(x, torch.Tensor) else x for x in buffers]
            out = side.model(*buffers)
            side.clock.sync()
            return {"out": flatten(out), "given": given}
    except Exception as e:
        return {"error": player.describe(e)}
    return {"error": {"type": "RuntimeError", "text": f"unknown timing request {do!r}"}}
