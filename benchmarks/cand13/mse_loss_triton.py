# kernel-lsp: reference=../../tasks/Loss/mse_loss.py
import torch
import torch.nn as nn
import triton
import triton.language as tl

# Elements per tile, tiles per program, warps, and ONE: the last program to finish adds the partials (one launch),
# or a second kernel does.
BLOCK, TILES, WARPS, ONE = 4096, 4, 8, True

_COUNTERS: dict = {}  # per device: how many programs of the running launch have stored their partial (reset to 0)


@triton.jit
def _sq_err_kernel(p_ptr, t_ptr, partial_ptr, count_ptr, out_ptr, n, n_partial, BLOCK: tl.constexpr,
                   TILES: tl.constexpr, ONE: tl.constexpr, RBLOCK: tl.constexpr):
    """partial[pid] = sum of (p - t)^2 over TILES consecutive tiles. ONE: the program that stores the last partial
    (an acquire-release counter orders the others' stores before it) adds them in order, writes the mean and resets
    the counter for the next launch."""
    pid = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(TILES):
        offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        d = (tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
             - tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32))
        acc += d * d
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))
    if ONE:
        tl.debug_barrier()
        done = tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="gpu")
        if done == n_partial - 1:
            total = tl.zeros((RBLOCK,), dtype=tl.float32)
            for start in range(0, n_partial, RBLOCK):
                offs = start + tl.arange(0, RBLOCK)
                total += tl.load(partial_ptr + offs, mask=offs < n_partial, other=0.0, cache_modifier=".cg")
            tl.store(out_ptr, (tl.sum(total, axis=0) / n).to(out_ptr.dtype.element_ty))
            tl.store(count_ptr, 0)


@triton.jit
def _mean_kernel(partial_ptr, out_ptr, n_partial, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_partial, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < n_partial, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p, t = pred.contiguous(), target.contiguous()
        n = p.numel()
        n_partial = max(1, triton.cdiv(n, BLOCK * TILES))
        partial = torch.empty((n_partial,), dtype=torch.float32, device=p.device)
        out = torch.empty((), dtype=pred.dtype, device=p.device)
        count = _COUNTERS.get(p.device)
        if count is None:
            count = _COUNTERS[p.device] = torch.zeros((1,), dtype=torch.int32, device=p.device)
        _sq_err_kernel[(n_partial,)](p, t, partial, count, out, n, n_partial, BLOCK=BLOCK, TILES=TILES, ONE=ONE,
                                     RBLOCK=1024, num_warps=WARPS)
        if not ONE:
            _mean_kernel[(1,)](partial, out, n_partial, n, BLOCK=1024)
        return out
