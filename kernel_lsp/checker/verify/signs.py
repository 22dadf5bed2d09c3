"""Outputs defined up to sign: eigenvectors, singular vectors and QR factors are each right with either sign (v and -v
are both unit eigenvectors of one eigenvalue), and two correct computations pick their own (LAPACK in float32 and in
float64 pick opposite signs for some columns; a kernel may normalize them its own way). Where the reference calls such
a decomposition, an output is judged after the sign of each of its vectors is chosen to match the truth: one sign for
the whole tensor, or one per column, or one per row, whichever matches best. PyTorch's own result is aligned the same
way, so its error (the budget) is not inflated by a sign it happened to pick. The verifier and the evidence runs
both judge this way. Where the reference returns a decomposition's values beside its vectors, the vectors of repeated
values are turned as a whole (rotations.py), which gives the vectors of values that do not repeat their signs.
"""

from __future__ import annotations

# torch functions (as TorchFunctionMode names them, a `linalg_` prefix dropped) whose vectors have no fixed sign
SIGN_FREE = frozenset({"eigh", "eig", "svd", "qr", "svd_lowrank", "pca_lowrank", "lobpcg"})


class SignFree(list):
    """The names of the sign-free decompositions a reference calls (a list), with `pairs`: which of its outputs hold
    a decomposition's values and which its vectors (rotations.Pair), for the rotation within repeated values."""
    pairs: tuple = ()


def sign_free_calls(ref, inputs: list) -> SignFree:
    """The sign-free decompositions the reference calls on these inputs, in call order, once each ([] when it calls
    none or cannot run), with the pairs of values and vectors among its outputs (rotations.returned_pairs)."""
    import torch
    from torch.overrides import TorchFunctionMode

    from .compare import flatten_outputs
    from .plan.variants import clone_inputs
    from .rotations import ROTATABLE, returned_pairs
    found = SignFree()
    results: list = []

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            name = name[len("linalg_"):] if name.startswith("linalg_") else name
            if name in SIGN_FREE and name not in found:
                found.append(name)
            result = func(*args, **(kwargs or {}))
            if getattr(func, "__name__", "") in ROTATABLE:
                results.append((func.__name__, tuple(result)))
            return result
    try:
        with Watch(), torch.no_grad():
            out = ref(*clone_inputs(inputs))
    except Exception:
        return SignFree()
    found.pairs = returned_pairs(results, flatten_outputs(out))
    return found


def signs_toward(y, t):
    """The +-1 factor (broadcastable to y) that brings y's vectors to t's signs: one for the whole tensor, one per
    column (vectors along dimension -2) or one per row (along dimension -1), whichever leaves the smallest largest
    error; None where there is nothing to align (not a floating tensor of t's shape, or every sign kept)."""
    import torch
    if not (isinstance(y, torch.Tensor) and isinstance(t, torch.Tensor) and y.is_floating_point()
            and t.is_floating_point() and y.shape == t.shape and y.dim() >= 1 and y.numel()):
        return None
    y64 = torch.nan_to_num(y.to(torch.float64), nan=0.0, posinf=0.0, neginf=0.0)
    t64 = torch.nan_to_num(t.to(torch.float64), nan=0.0, posinf=0.0, neginf=0.0).to(y64.device)
    product = y64 * t64
    dots = [product.sum().reshape([1] * y.dim())]
    if y.dim() >= 2:
        dots += [product.sum(dim=-2, keepdim=True), product.sum(dim=-1, keepdim=True)]
    best, best_err = None, None
    for dot in dots:
        s = torch.where(dot < 0, -1.0, 1.0).to(torch.float64)
        err = float((y64 * s - t64).abs().max())
        if best_err is None or err < best_err:
            best, best_err = s, err
    if best is None or bool((best > 0).all()):
        return None
    return best


def flipped(y, s, keep=None):
    """y with its vectors' signs multiplied by s (signs_toward), exactly (a sign flip rounds nothing); elements equal
    to `keep` (a poison value that marks an unwritten element) are left as they are."""
    import torch
    if s is None or not isinstance(y, torch.Tensor):
        return y
    out = y * s.to(device=y.device, dtype=y.dtype)
    return torch.where(y == keep, y, out) if keep is not None else out


def aligned(outputs: list, truth: list, keep=None, found=None) -> list:
    """Each output with its vectors' signs brought to the truth's (signs_toward); the outputs that `found`'s pairs
    (sign_free_calls) name as a decomposition's vectors turned within its repeated values instead (rotations.py)."""
    from .rotations import rotated
    outputs, done = rotated(outputs, truth, getattr(found, "pairs", ()), keep)
    return [flipped(y, signs_toward(y, t), keep) if t is not None and j not in done else y
            for j, (y, t) in enumerate(zip(outputs, list(truth) + [None] * (len(outputs) - len(truth))))]
