"""Judging the evidence runs (isolated.py makes them): pure functions of what the player sent back and the truth
computed for each input set (sets.py), so they are tested on made-up runs. Only gross errors count here (the
verifier already judged the fine precision): an error no rounding explains."""

from __future__ import annotations

from ...problem.errors import raise_code
from ..signs import aligned
from .sets import REFILLS, SPARSE_CHANGES


def judged(runs: dict, truth: dict, random: bool, signs: bool = False) -> list[tuple[str, str, dict]]:
    """The findings of the runs, as (code, message, data); pure, so it is tested on made-up runs. With `random`
    (a random reference, or values the interpreter cannot compute faithfully) only launches are judged; with `signs`
    the outputs are defined up to the sign of each vector (signs.py)."""
    out: list[tuple[str, str, dict]] = []
    plain = runs.get("plain") or {}
    where = "where it is called afresh (the evidence runs)"
    if plain.get("error"):
        return [("KL220", f"the implementation raises {where}: {plain['error']}", {})]
    if not plain.get("launches"):
        return [("KL220", f"the implementation launches no Triton kernel {where}", {})]
    t_a, r_a = truth["A"]
    if len(plain.get("outputs", [])) != len(t_a):
        return [("KL220", f"the implementation returns {len(plain.get('outputs', []))} tensors {where}, the "
                 f"reference {len(t_a)}", {})]
    if not random:
        bad = _gross(plain["outputs"], t_a, r_a, signs)
        if bad:
            return [("KL220", f"the implementation computes a different result {where}: {bad}", {})]
    watched = runs.get("watched") or {}
    kinds = watched.get("kinds") or []
    if kinds and all(k in ("copy", "nothing") for k in kinds):
        what = ("copies a tensor that was already computed" if "copy" in kinds else "changes nothing")
        return [("KL221", f"every Triton launch only {what}: the result is computed before the kernel runs "
                 "(by PyTorch?), and the kernel moves or rewrites it", {"launches": kinds[:20]})]
    aliases = set(plain.get("aliases", []))
    skipped, refilled = runs.get("skipped") or {}, runs.get("refilled") or {}
    again = runs.get("skipped-2") or {}
    if not skipped.get("error") and len(skipped.get("outputs", [])) == len(plain["outputs"]):
        second = again.get("outputs") if not again.get("error") else None
        independent = _launch_independent(plain["outputs"], skipped["outputs"], refilled.get("outputs"), aliases,
                                          second)
        if independent:
            out.append(("KL221", independent[0], independent[1]))
    if not random:
        refill = "called again on the same buffers refilled in place with new values"
        chain = []
        for k, (name, values) in enumerate(REFILLS, 2):
            if name == "sparse":
                chain.append((name, values, f"called on the same buffers with {SPARSE_CHANGES} elements of each input "
                              "changed (not the first or last)", "the address and a sample of the values"))
            else:
                chain.append((name, values, refill + (f" (call {k} on them)" if k > 2 else ""),
                              "an address" if k == 2 else "an address once it repeats (a warmed-up loop)"))
        chain.append(("tail", "C", "called on inputs that differ from the last call only past their first elements",
                      "part of the input"))
        for name, values, what, cause in chain:
            run = runs.get(name)
            if not run or values not in truth:
                continue
            if run.get("error"):
                out.append((raise_code(run["error"]), f"the implementation raises when {what}: {run['error']}", {}))
                break
            if name == "sparse" and not _repeats(run["outputs"], [runs.get(n) for n in ("plain", REFILLS[-2][0])]):
                # A few elements changed may break what a correct kernel may assume of its inputs (sorted, paired,
                # summing to one): only an output that is the earlier call's, bit for bit, is a cache here.
                continue
            bad = _gross(run["outputs"], *truth[values], signs=signs)
            if bad:
                # Where the sparse change lands is random per run: the message names no element, so that it is the
                # same on every run.
                detail = "the output did not follow them" if name == "sparse" else bad
                out.append(("KL206", f"stale result when {what} ({detail}): a result cached on {cause}?", {}))
                break
        if any(code == "KL206" for code, _, _ in out):  # a cache hit explains outputs that no launch made
            out = [f for f in out if f[0] != "KL221"]
        large = runs.get("large")
        if large and "large" in truth:
            n = sum(t.numel() for t in truth["large"][0])
            if large.get("error"):
                out.append(("KL209", f"the implementation raises at a larger size ({n} output elements): "
                                     f"{large['error']}", {}))
            else:
                bad = _gross(large["outputs"], *truth["large"], signs=signs)
                if bad:
                    out.append(("KL200", f"wrong at a larger size ({n} output elements), beyond the sizes the "
                                         f"verifier ran: {bad} (a launcher that caps its grid?)", {}))
    return out


def _gross(outputs: list, truth: list, reference: list, signs: bool = False) -> str:
    """'' when every output is within what rounding explains; else the first gross error, described. `signs`: the
    outputs are defined up to the sign of each vector, brought to the truth's first (signs.py; a SignFree: its vectors
    turned within repeated values too, rotations.py)."""
    import torch
    from ..compare import compare_tensor
    if len(outputs) != len(truth):
        return f"{len(outputs)} outputs where the reference has {len(truth)}"
    outputs = [y.to(t.device) for y, t in zip(outputs, truth)]  # judged where the truth is
    if signs:
        outputs = aligned(outputs, truth, found=signs)
    for j, (y, t, r) in enumerate(zip(outputs, truth, reference)):
        name = "output" if len(outputs) == 1 else f"output {j}"
        if tuple(y.shape) != tuple(t.shape):
            return f"{name} has shape {tuple(y.shape)}, the truth {tuple(t.shape)}"
        r = r.to(y.dtype) if r.dtype != y.dtype else r
        c = compare_tensor(y, r, t.to(torch.float64) if t.is_floating_point() else t, name)
        if not c.ok and (c.code != "KL200" or _gross_at_scale(y, t)):
            return c.message
    return ""


def _gross_at_scale(y, t) -> bool:
    """An error no rounding explains, at the tensor's scale: the largest error over the largest truth beyond the
    square root of the unit roundoff (2.4e-4 in fp32, and no less for wider types: a float64 problem's kernel that
    computes in fp32 is the verifier's to judge, on the reference's spread). Relative to each element, an element
    near zero makes any accumulation order look gross (conv1d's TF32 split, 3.6e-6 off at the scale, was 0.13 off
    near zero)."""
    import math

    import torch
    from ..compare import UNIT_ROUNDOFF
    y64, t64 = y.to(torch.float64), t.to(torch.float64)
    finite = torch.isfinite(t64) & torch.isfinite(y64)
    if not bool(finite.any()):
        return False
    scale = float(t64[finite].abs().max())
    err = float((y64[finite] - t64[finite]).abs().max())
    return err > math.sqrt(max(UNIT_ROUNDOFF.get(str(y.dtype), 0.0), 2.0**-24)) * max(scale, 1e-30)


def _launch_independent(plain: list, skipped: list, refilled: list | None, aliases: set[int],
                        skipped_again: list | None = None) -> tuple[str, dict] | None:
    """Elements that come out the same with every launch skipped (and their tensors poisoned), with a second poison
    too when there is a second run (an int8 output holds the first poison's value by chance one time in 256), and
    that change with the inputs: no launch computed them."""
    import torch
    from ..compare import unravel
    total, flagged, first = 0, 0, None
    for j, (p, s) in enumerate(zip(plain, skipped)):
        if j in aliases or p.numel() == 0 or p.shape != s.shape:
            continue
        if refilled is None or j >= len(refilled) or refilled[j].shape != p.shape:
            continue  # without a second input there is no telling a constant from a copy
        varies = ~_bitwise_equal(p, refilled[j])
        if p.is_floating_point():
            varies &= ~torch.isnan(p)  # the poison is NaN: a NaN the implementation computes cannot be told from it
        same = _bitwise_equal(p, s) & varies
        if skipped_again is not None and j < len(skipped_again) and skipped_again[j].shape == p.shape:
            same &= _bitwise_equal(p, skipped_again[j])
        total += int(varies.sum())
        count = int(same.sum())
        if count and first is None:
            first = (j, unravel(int(same.reshape(-1).nonzero()[0]), tuple(p.shape)))
        flagged += count
    if not flagged:
        return None
    data = {"elements": flagged, "of": total}
    if flagged == total:
        return ("no output element depends on a Triton launch: with every launch skipped the implementation returns "
                "the same values, so the kernel's work is discarded and the result comes from elsewhere "
                "(PyTorch?)", data)
    j, index = first
    return (f"{flagged} of the {total} output elements that change with the inputs do not depend on any Triton "
            f"launch (first: output {j} at {index}): they are computed without the kernel (a partial fallback?)", data)


def _repeats(outputs: list, earlier: list) -> bool:
    """Whether `outputs` are, tensor for tensor and bit for bit, one of the `earlier` runs' outputs."""
    for run in earlier:
        old = (run or {}).get("outputs") or []
        if (outputs and len(old) == len(outputs)
                and all(a.shape == b.shape and a.dtype == b.dtype and bool(_bitwise_equal(a, b).all())
                        for a, b in zip(outputs, old))):
            return True
    return False


def _bitwise_equal(a, b):
    import torch
    if a.is_floating_point():
        both_nan = torch.isnan(a) & torch.isnan(b)
        return (a == b) | both_nan
    return a == b
