"""Outputs defined up to a rotation: where eigenvalues (or singular values) repeat, any orthonormal basis of their
subspace is right, and two correct computations (LAPACK in float32 and in float64, a kernel's own method) return
different ones. Where the reference returns both a decomposition's values and its vectors (eigh's (L, Q), svd's
(U, S, Vh) or (U, S, V)), the vectors of each cluster of near-equal values of the truth are brought to the truth's by
the orthogonal Procrustes rotation inside that cluster's columns (Golub & Van Loan, 6.4.1): Y_C R with R = U W^T
from the SVD U S W^T of Y_C^T T_C, the orthogonal R nearest to mapping Y_C onto T_C. A one-column cluster gets a
sign, as signs.py gives it. A rotation changes no vector's length and leaves the subspace the cluster spans, so
vectors of a wrong subspace, or not orthonormal, still fail.

Clusters: values of one matrix (the last dimension of the values output) whose sorted neighbours are at most
sqrt(u) * max|value| apart, u the unit roundoff of the output's dtype. A backward-stable computation in that dtype
moves the matrix by about u * ||A|| (||A|| = max|eigenvalue|, or the largest singular value), which turns the
vectors of two values g apart by up to u * ||A|| / g (Davis-Kahan): below a gap of sqrt(u) * ||A|| that rotation
exceeds sqrt(u), the error the evidence runs call gross, so such vectors are not determined at the output's
precision. Wider gaps keep their vectors and are judged as they are.

The singular vectors of one nonzero singular value turn together (U_C R and V_C R keep U S V^T): U's and V's
clusters get one rotation, from the sum of their cross products. The singular vectors of zero singular values, and
the columns of a full U or V beyond the singular values, are any orthonormal bases of the null spaces, each turned
on its own.
"""

from __future__ import annotations

from typing import NamedTuple

# The decompositions whose values and vectors are matched to the reference's outputs, by the name TorchFunctionMode
# gives them: the position of the values in the result, and of each vectors tensor with the dimension its vectors
# run along (-2: columns, eigh's Q and svd's U, torch.svd's V; -1: rows, linalg.svd's Vh).
ROTATABLE = {"linalg_eigh": (0, ((1, -2),)), "svd": (1, ((0, -2), (2, -2))),
             "linalg_svd": (1, ((0, -2), (2, -1)))}


class Pair(NamedTuple):
    """A reference output holding a decomposition's values, and the outputs holding its vectors, each with the
    dimension its vectors run along (-2: columns, -1: rows); indices into the reference's flat outputs."""
    values: int
    vectors: tuple[tuple[int, int], ...]


def returned_pairs(calls: list, outputs: list) -> tuple[Pair, ...]:
    """The pairs of the decompositions' results (name, result) that the reference returns as its own flat outputs:
    the values and at least one vectors tensor, each the very tensor or an equal one. A vectors tensor the reference
    changed (scaled by its values, transposed) is no pair: its vectors keep only their sign freedom."""
    import torch
    pairs: list[Pair] = []
    used: set[int] = set()

    def find(x) -> int | None:
        if not isinstance(x, torch.Tensor):
            return None
        for same in (lambda o: o is x, lambda o: o.shape == x.shape and o.dtype == x.dtype
                     and o.device == x.device and torch.equal(o, x)):
            for i, o in enumerate(outputs):
                if i not in used and isinstance(o, torch.Tensor) and same(o):
                    return i
        return None
    for name, result in calls:
        if name not in ROTATABLE or not isinstance(result, tuple):
            continue
        v_at, vectors_at = ROTATABLE[name]
        if len(result) <= max(p for p, _ in vectors_at):
            continue
        values = find(result[v_at])
        if values is None:
            continue
        used.add(values)
        found = []
        for pos, dim in vectors_at:
            i = find(result[pos])
            if i is not None:
                used.add(i)
                found.append((i, dim))
        if found:
            pairs.append(Pair(values, tuple(found)))
        else:
            used.discard(values)
    return tuple(pairs)


def rotated(outputs: list, truth: list, pairs, keep=None) -> tuple[list, set[int]]:
    """The outputs with the vectors of each pair brought to the truth's within the clusters of the truth's values,
    and the indices of the outputs so aligned (the others are left as they are, for signs.py). A pair whose tensors do
    not have the shapes of a decomposition (an output missing, another shape than the truth's) is left out. `keep`: a
    poison value that marks an unwritten element; a cluster holding it, or an element that is not finite, gets only a
    sign per vector (a rotation would spread it over the cluster), and the element itself stays."""
    import torch
    out = list(outputs)
    done: set[int] = set()
    for pair in pairs or ():
        members = [(i, dim) for i, dim in pair.vectors if _fits(outputs, truth, pair.values, i, dim)]
        if not members:
            continue
        s = truth[pair.values].detach().to(torch.float64).cpu()
        batch = s.shape[:-1]
        s = s.reshape(-1, s.shape[-1]) if s.dim() else s.reshape(1, 1)
        ys = [_columns(outputs[i], dim, batch) for i, dim in members]
        ts = [_columns(truth[i], dim, batch).to(ys[k].device) for k, (i, dim) in enumerate(members)]
        u = max(_roundoff(outputs[i]) for i, _ in members)
        rots = _signs(s, ys, ts, u)
        for b in _degenerate(s, ys, u):  # in Python only the matrices with a cluster or a null space to turn
            for rot, r in zip(rots, _rotations(s, ys, ts, u, keep, b)):
                rot[b] = r
        for k, (i, dim) in enumerate(members):
            rot = rots[k].to(ys[k].device)
            y = outputs[i]
            cols = ys[k]
            turned = _apply(cols, rot)
            back = turned.to(y.dtype)
            back = back.reshape(*batch, *cols.shape[-2:]) if batch else back.reshape(cols.shape[-2:])
            back = back if dim == -2 else back.mT
            if keep is not None:
                back = torch.where(y == keep, y, back)
            out[i] = back.contiguous() if y.is_contiguous() else back
            done.add(i)
    return out, done


def _fits(outputs: list, truth: list, values: int, vectors: int, dim: int) -> bool:
    """Both sides hold a float values tensor (..., k) and a float vectors tensor of the same shape, (..., n, m) with
    m >= k vectors along `dim`, the batch dimensions the values'."""
    import torch
    if max(values, vectors) >= min(len(outputs), len(truth)):
        return False
    s, y, t = truth[values], outputs[vectors], truth[vectors]
    if not all(isinstance(x, torch.Tensor) and x.is_floating_point() for x in (s, y, t)) or outputs[values] is None:
        return False
    if y.shape != t.shape or y.dim() < 2 or s.dim() < 1 or y.dim() != s.dim() + 1 or not y.numel():
        return False
    k = y.shape[-1] if dim == -2 else y.shape[-2]
    return tuple(y.shape[:-2]) == tuple(s.shape[:-1]) and k >= s.shape[-1]


def _columns(x, dim: int, batch):
    """x as float64 columns, one matrix per row of the values: (batch, n, m), each vector a column."""
    import torch
    x = x.detach().to(torch.float64)
    x = x if dim == -2 else x.mT
    return x.reshape(-1, *x.shape[-2:]) if batch else x.reshape(1, *x.shape[-2:])


def _roundoff(y) -> float:
    from .compare import UNIT_ROUNDOFF
    return UNIT_ROUNDOFF.get(str(y.dtype), 2.0**-24)


def clusters(values, u: float) -> list[list[int]]:
    """The positions of one matrix's values grouped into clusters: sorted neighbours at most sqrt(u) * max|value|
    apart. NaN and infinite values stand alone."""
    import math

    import torch
    v = values.to(torch.float64)
    finite = torch.isfinite(v)
    scale = float(v[finite].abs().max()) if bool(finite.any()) else 0.0
    tol = math.sqrt(u) * scale
    order = [int(i) for i in torch.argsort(torch.where(finite, v, torch.inf))]
    groups: list[list[int]] = []
    for i in order:
        if groups and bool(finite[i]) and bool(finite[groups[-1][-1]]) \
                and float(v[i]) - float(v[groups[-1][-1]]) <= tol:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _signs(s, ys: list, ts: list, u: float) -> list:
    """Per vectors tensor, a diagonal of signs (batch, m, m): each vector's sign, shared by U's and V's vectors of one
    nonzero value (the sum of their dot products), each tensor's own for a zero value and the vectors beyond."""
    import math

    import torch
    k = s.shape[-1]
    clean = [(torch.nan_to_num(y, nan=0.0, posinf=0.0, neginf=0.0), torch.nan_to_num(t, nan=0.0, posinf=0.0,
                                                                                      neginf=0.0)) for y, t in zip(ys, ts)]
    dots = [(y * t).sum(dim=-2).cpu() for y, t in clean]
    shared = sum(d[:, :k] for d in dots)
    tol = math.sqrt(u) * torch.nan_to_num(s.abs(), nan=0.0, posinf=0.0).amax(dim=-1, keepdim=True)
    zero = s.abs() <= tol
    out = []
    for d in dots:
        d = d.clone()
        d[:, :k] = torch.where(zero, d[:, :k], shared)
        out.append(torch.diag_embed(torch.where(d < 0, -1.0, 1.0).to(torch.float64)))
    return out


def _degenerate(s, ys: list, u: float) -> list[int]:
    """The matrices (rows of the values) a rotation may turn: two values in one cluster, a zero value where U and V
    turn on their own or beside vectors beyond the values, or more than one vector beyond the values."""
    import math

    import torch
    k = s.shape[-1]
    extra = max(y.shape[-1] for y in ys) - k
    if extra > 1:
        return list(range(s.shape[0]))
    finite = torch.nan_to_num(s, nan=0.0, posinf=0.0, neginf=0.0)
    tol = math.sqrt(u) * finite.abs().amax(dim=-1, keepdim=True)
    near = (finite.sort(dim=-1).values.diff(dim=-1) <= tol).any(dim=-1)
    if extra or len(ys) > 1:
        near |= (finite.abs() <= tol).any(dim=-1)
    return near.nonzero().flatten().tolist()


def _rotations(s, ys: list, ts: list, u: float, keep, b: int) -> list:
    """Per vectors tensor, the rotation (m x m) of matrix b's vectors: block-diagonal over the clusters of its values,
    one rotation shared by the tensors for a nonzero cluster, one each for the zero cluster and the vectors beyond
    the values."""
    import math

    import torch
    k = s.shape[-1]
    rots = [torch.eye(y.shape[-1], dtype=torch.float64) for y in ys]
    groups = clusters(s[b], u)
    tol = math.sqrt(u) * float(torch.nan_to_num(s[b].abs(), nan=0.0, posinf=0.0).max()) if k else 0.0
    zero = [i for g in groups if all(abs(float(s[b, j])) <= tol for j in g) for i in g]
    groups = [g for g in groups if not all(abs(float(s[b, j])) <= tol for j in g)]
    for g in groups:  # shared: U_C R and V_C R keep U S V^T
        idx = torch.tensor(g)
        r = _procrustes([(y[b][:, idx], t[b][:, idx]) for y, t in zip(ys, ts)], keep)
        for rot in rots:
            rot[idx[:, None], idx[None, :]] = r
    for rot, y, t in zip(rots, ys, ts):  # each on its own: null spaces
        idx = torch.tensor(zero + list(range(k, y.shape[-1])), dtype=torch.long)
        if idx.numel():
            rot[idx[:, None], idx[None, :]] = _procrustes([(y[b][:, idx], t[b][:, idx])], keep)
    return rots


def _procrustes(blocks: list, keep):
    """The orthogonal R (c x c, on the CPU) that best maps the blocks' Y onto their T together (sum of Y^T T, its
    polar factor); only a sign per vector (the diagonal's) where a block holds a non-finite element or the poison
    value."""
    import torch
    m = sum(y.mT @ t for y, t in ((torch.nan_to_num(y, nan=0.0, posinf=0.0, neginf=0.0),
                                   torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)) for y, t in blocks))
    clean = all(bool(torch.isfinite(y).all()) and (keep is None or not bool((y == keep).any())) for y, _ in blocks)
    m = m.cpu()  # (the rotations are assembled on the CPU, whatever device the outputs are on)
    if m.shape[-1] == 1 or not clean:
        return torch.diag(torch.where(torch.diagonal(m) < 0, -1.0, 1.0).to(torch.float64))
    left, _, right = torch.linalg.svd(m)
    return left @ right


def _apply(cols, rot):
    """cols @ rot, with a diagonal of signs applied element by element (exact, and a NaN or infinity stays where it
    is) and only the clusters' blocks multiplied out."""
    import torch
    diagonal = torch.diagonal(rot, dim1=-2, dim2=-1)
    off = rot - torch.diag_embed(diagonal)
    if not bool((off != 0).any()):
        return cols * diagonal[..., None, :]
    out = cols * diagonal[..., None, :]
    touched = (off != 0).any(dim=-2) | (off != 0).any(dim=-1)  # per matrix, the columns of rotated clusters
    for b in touched.any(dim=-1).nonzero().flatten().tolist():
        idx = touched[b].nonzero().flatten()
        out[b][:, idx] = cols[b][:, idx] @ rot[b][idx[:, None], idx[None, :]]
    return out
