"""After the evidence runs pass: outputs held across calls, and the soak, many more calls on fresh tensors and on
buffers refilled in place, a drawn share of them judged (isolated.py calls them, in the same player)."""

from __future__ import annotations

from .judge import _gross

SOAK_CALLS = {"cpu": (12, 24), "cuda": (200, 600)}  # calls of the soak, drawn per check within these bounds
SOAK_OPS = 300_000  # under the interpreter, the soak stops once its calls have taken this many operations
SOAK_JUDGED = 0.25  # the chance that a call's outputs are judged, decided after the call has returned


def held_outputs(player, impl, plan: dict) -> list[tuple[str, str, dict]]:
    """A caller that keeps a call's output while it calls again (a batch loop, a decode loop) must still find it
    right: the implementation called on A, its output objects kept, then on B; A's output is judged as it is after
    that. An implementation that returns the same buffer every call has B's values there."""
    import torch
    names = [n for n in ("A", "B") if n in plan["sets"]]
    if len(names) < 2:
        return []
    knobs = plan["knobs"] or None
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    first = player.call(impl, [], copy_of="set:A", return_out=False, hold=True, knobs=knobs)
    second = player.call(impl, [], copy_of="set:B", return_out=False, knobs=knobs)
    for r in (first, second):
        if r.error is not None:  # the evidence runs made these calls on these values without an error
            return [("KL209", "the implementation raises when it is called again while the caller keeps an earlier "
                     f"call's output: {_said(r.error)}", {})]
    held = [y for y in player.fetch(held=True) if isinstance(y, torch.Tensor)]
    bad = _gross(held, *plan["truth"]["A"], signs=plan.get("signs", False))
    if not bad:
        return []
    return [("KL206", "the output of a call changed when the implementation was called again: a caller that keeps "
             "it (a batch loop, a decode loop) finds the next call's result there; a fresh output buffer per call "
             f"is what PyTorch returns ({bad})", {})]


def _said(error) -> str:
    """An exception of the implementation as a message quotes it: its type and the first line of its text."""
    text = (str(error).splitlines() or [""])[0][:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def soak(player, impl, plan: dict, device: str, rng=None) -> list[tuple[str, str, dict]]:
    """Many more calls on one set of buffers refilled in place through `.data` or, on the CPU, numpy views (their
    version counters do not move, as when a kernel writes them) and on fresh tensors, from sets A, B and D in an order drawn per check. The second
    call always refills the first call's buffers with another set, so a result remembered per tensor object and
    version counter is stale there whatever the draw. A call's outputs are fetched and judged only after the call has
    returned (nothing in the player can tell a judged call from another): every call under the interpreter, on a GPU
    a drawn quarter of them and the last. One that goes wrong after the N-th call is wrong on a judged call, for N
    below the number of calls made (drawn, so no fixed N is safe). Under the interpreter the calls stop past SOAK_OPS
    operations (a count, not a time: the same kernel gets the same bound on any machine), the last one still
    judged."""
    import random
    rng = rng or random.SystemRandom()
    low, high = SOAK_CALLS.get(device, SOAK_CALLS["cpu"])
    calls = rng.randint(low, high)
    names = [n for n in ("A", "B", "D") if n in plan["sets"]]
    player.stash({f"set:{n}": plan["sets"][n] for n in names})
    knobs = plan["knobs"] or None
    spent = 0
    held = None  # the set the kept buffers hold
    judged_share = 1.0 if device == "cpu" else SOAK_JUDGED
    for i in range(calls):  # at least SOAK_CALLS' low bound: the second call below is always made
        name = rng.choice(names)
        last = i == calls - 1 or spent > SOAK_OPS
        if held is None:
            r = player.call(impl, [], copy_of=f"set:{name}", buffers="soak-args", return_out=False, knobs=knobs)
        elif i == 1 and len(names) > 1:  # another set's values in the first call's buffers, through .data
            name = rng.choice([n for n in names if n != held])
            r = player.call(impl, [], buffers="soak-args", refill=f"set:{name}", return_out=False, knobs=knobs)
        elif rng.random() < 0.5:
            r = player.call(impl, [], copy_of=f"set:{name}", return_out=False, knobs=knobs)
        else:  # on the CPU, through a numpy view of the buffers as often as through .data
            via = "numpy" if device == "cpu" and rng.random() < 0.5 else "data"
            r = player.call(impl, [], buffers="soak-args", refill=f"set:{name}", return_out=False, knobs=knobs,
                            refill_via=via)
        if held is None:
            held = name
        spent += r.ops
        # Which call, on which set and buffers, is drawn per check: a message names none, so it is the same every run.
        how = ("on fresh tensors or on one set of buffers refilled in place through .data or numpy views (their "
               "version counters unchanged)")
        if r.error is not None:
            return [("KL209", f"the implementation raises on a later call made afresh {how}: {_said(r.error)}", {})]
        if last or i == 1 or rng.random() < judged_share:
            import torch
            out = [y for y in player.fetch() if isinstance(y, torch.Tensor)]  # as the evidence runs keep them
            bad = _gross(out, *plan["truth"][name], signs=plan.get("signs", False))
            if bad:
                return [("KL206", f"wrong on a later call made afresh {how}, after more calls than the verifier "
                         "makes: a result remembered across calls, or one that goes wrong after a number of calls?",
                         {})]
        if last:
            break
    return []
