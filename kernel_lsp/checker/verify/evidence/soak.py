"""After the evidence runs pass: outputs held across calls, and the soak, many more calls on fresh tensors and on
buffers refilled in place, a drawn share of them judged (isolated.py calls them, in the same player)."""

from __future__ import annotations

from ...problem.errors import raise_code
from .judge import _gross

SOAK_CALLS = {"cpu": (12, 24), "cuda": (200, 600)}  # calls of the soak, drawn per check within these bounds
SOAK_OPS = 300_000  # under the interpreter, the soak stops once its calls have taken this many operations
SOAK_JUDGED = 0.25  # the chance that a call's outputs are judged, decided after the call has returned


def held_outputs(player, impl, plan: dict) -> list[tuple[str, str, dict]]:
    """A caller that keeps calls' outputs while it calls again (a batch loop, a decode loop's window of the last
    results) must still find them right: the implementation called on A and on B, both outputs' objects kept, then
    on D; A's and B's outputs are judged as they are after that. An implementation that returns the same buffer
    every call, or two in turn (double buffering), has a later call's values there. With only A and B: A kept, then
    B."""
    import torch
    names = [n for n in ("A", "B", "D") if n in plan["sets"]]
    if len(names) < 2:
        return []
    knobs = plan["knobs"] or None
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    kept, last = names[:-1], names[-1]
    results = [player.call(impl, [], copy_of=f"set:{n}", return_out=False, hold=True, knobs=knobs) for n in kept]
    results.append(player.call(impl, [], copy_of=f"set:{last}", return_out=False, knobs=knobs))
    for r in results:
        if r.error is not None:  # the evidence runs made these calls on these values without an error
            return [(raise_code(r.error), "the implementation raises when it is called again while the caller keeps "
                     f"earlier calls' outputs: {_said(r.error)}", {})]
    held = player.fetch_held()[-len(kept):]
    for name, outs in zip(kept, held):
        bad = _gross([y for y in outs if isinstance(y, torch.Tensor)], *plan["truth"][name],
                     signs=plan.get("signs", False))
        if bad:
            later = ", ".join(n for n in names if n > name)
            return [("KL206", f"the output of a call changed when the implementation was called again ({len(names) - 1}"
                     f" calls kept, then one more; the call on set {name} changed after those on {later}): a caller "
                     "that keeps it (a batch loop, a decode loop) finds a later call's result there; a fresh output "
                     f"buffer per call is what PyTorch returns ({bad})", {})]
    return []


def _said(error) -> str:
    """An exception of the implementation as a message quotes it: its type and the first line of its text."""
    text = (str(error).splitlines() or [""])[0][:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def soak(player, impl, plan: dict, device: str, rng=None) -> list[tuple[str, str, dict]]:
    """Many more calls on one set of buffers refilled in place through `.data` or, on the CPU, numpy views (their
    version counters do not move, as when a kernel writes them) and on fresh tensors, from sets A, B and D in an order
    drawn per check. The second call always refills the first call's buffers with another set, so a result remembered
    per tensor object and version counter is stale there whatever the draw. A call's outputs are judged only after
    the call has returned: on a GPU the calls go to the player a batch at a time (`SOAK_BATCH`), which keeps a copy of
    every call's outputs as it returned, and a drawn quarter of them and the last are fetched and judged afterwards
    (nothing in the player can tell a judged call from another); under the interpreter every call is judged, one at
    a time. One that goes wrong after the N-th call is wrong on a judged call, for N below the number of calls made
    (drawn, so no fixed N is safe). Under the interpreter the calls stop past SOAK_OPS operations (a count, not a
    time: the same kernel gets the same bound on any machine), the last one still judged."""
    import random
    rng = rng or random.SystemRandom()
    low, high = SOAK_CALLS.get(device, SOAK_CALLS["cpu"])
    names = [n for n in ("A", "B", "D") if n in plan["sets"]]
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    schedule = _schedule(rng.randint(low, high), names, device, plan["knobs"] or None, rng)
    judged_share = 1.0 if device == "cpu" else SOAK_JUDGED
    batch = 1 if device == "cpu" else _batch(plan)
    # Which call, on which set and buffers, is drawn per check: a message names none, so it is the same every run.
    how = ("on fresh tensors or on one set of buffers refilled in place through .data or numpy views (their "
           "version counters unchanged)")
    spent = 0
    for first in range(0, len(schedule), batch):
        part = schedule[first:first + batch]
        results = player.calls(impl, [call for _, call in part])
        judged, last = [], False
        for j, r in enumerate(results):
            if r.error is not None:
                return [(raise_code(r.error),
                         f"the implementation raises on a later call made afresh {how}: {_said(r.error)}", {})]
            spent += r.ops
            i = first + j
            last = i == len(schedule) - 1 or spent > SOAK_OPS
            if last or i == 1 or rng.random() < judged_share:
                judged.append(j)
            if last:
                break
        if judged:
            import torch
            for j, outs in zip(judged, player.fetch_calls(judged)):
                out = [y for y in outs if isinstance(y, torch.Tensor)]  # as the evidence runs keep them
                if _gross(out, *plan["truth"][part[j][0]], signs=plan.get("signs", False)):
                    return [("KL206", f"wrong on a later call made afresh {how}, after more calls than the verifier "
                             "makes: a result remembered across calls, or one that goes wrong after a number of "
                             "calls?", {})]
        if last:
            break
    return []


SOAK_BATCH = 32  # calls per exchange with the player on a GPU, fewer where their kept outputs would pass SOAK_KEPT
SOAK_KEPT = 256 << 20  # bytes of outputs the player keeps copies of for one batch


def _batch(plan: dict) -> int:
    """Calls per exchange: SOAK_BATCH, or as many as keep SOAK_KEPT bytes of output copies (at least one)."""
    import torch
    truth = plan["truth"].get("A") or next(iter(plan["truth"].values()), ([], []))
    size = sum(t.numel() * t.element_size() for t in truth[0] if isinstance(t, torch.Tensor))
    return max(1, min(SOAK_BATCH, SOAK_KEPT // max(size, 1)))


def _schedule(calls: int, names: list[str], device: str, knobs, rng) -> list[tuple[str, dict]]:
    """The soak's calls, drawn: (the set whose values the call sees, `Player.calls`' keyword arguments). The first
    call makes the kept buffers from a set's copies; the second refills them with another set; then fresh copies
    or the buffers refilled, half and half (on the CPU through a numpy view as often as through `.data`)."""
    schedule: list[tuple[str, dict]] = []
    held = None  # the set the kept buffers hold after the first call
    for i in range(calls):
        name = rng.choice(names)
        if held is None:
            call = {"copy_of": f"set:{name}", "buffers": "soak-args"}
            held = name
        elif i == 1 and len(names) > 1:  # another set's values in the first call's buffers, through .data
            name = rng.choice([n for n in names if n != held])
            call = {"buffers": "soak-args", "refill": f"set:{name}"}
        elif rng.random() < 0.5:
            call = {"copy_of": f"set:{name}"}
        else:
            via = "numpy" if device == "cpu" and rng.random() < 0.5 else "data"
            call = {"buffers": "soak-args", "refill": f"set:{name}", "refill_via": via}
        schedule.append((name, {**call, "knobs": knobs}))
    return schedule
