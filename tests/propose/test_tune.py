"""Launch-literal tuning: where the knobs are, which configs are tried, and the minimal edit (propose/tune.py);
and on a CPU, `optimize --mode tune` prunes configs that overflow a target's shared memory and changes nothing."""

from __future__ import annotations

import json

from kernel_lsp.propose.tune import apply, configs, launch_sites
from tests.conftest import ROOT, run_cli, write

GELU = (ROOT / "tasks" / "Activation" / "gelu_triton.py").read_text()


def test_tune_finds_the_tile_and_its_grid_literal_and_adds_missing_launch_options():
    (site,) = launch_sites(GELU)
    knobs = {k.name: k for k in site.knobs}
    assert knobs["BLOCK"].value == 1024 and len(knobs["BLOCK"].spans) == 2  # the keyword and cdiv(n, 1024)
    assert knobs["num_warps"].value == 4 and knobs["num_stages"].insert_at is not None
    new = apply(GELU, site, {"BLOCK": 2048, "num_warps": 8, "num_stages": 2})
    assert "_gelu_kernel[(triton.cdiv(n, 2048),)](xc, out, n, BLOCK=2048, num_warps=8, num_stages=2)" in new
    assert len([ln for ln in zip(GELU.splitlines(), new.splitlines()) if ln[0] != ln[1]]) == 1  # one line changed


def test_tune_ties_tiles_that_share_a_grid_literal():
    src = (ROOT / "tests" / "corpus" / "ok_matmul_fp16.py").read_text()
    (site,) = launch_sites(src)
    assert site.knobs[0].name == "BM/BN/BK"
    new = apply(src, site, {"BM/BN/BK": 64})
    assert "grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))" in new and "BM=64, BN=64, BK=64" in new


def test_tune_configs_are_nearest_first_and_exclude_the_current_one():
    (site,) = launch_sites(GELU)
    cs = configs(site, limit=8)
    current = {"BLOCK": 1024, "num_warps": 4, "num_stages": 3}
    assert current not in cs and len(cs) == 8
    assert all(sum(c[k] != current[k] for k in c) == 1 for c in cs[:5])  # one knob changed first


MATMUL = '''
# kernel-lsp: entry=matmul reference=ref inputs=make_inputs
import torch
import triton
import triton.language as tl

M, N, K = 40, 72, 48


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=torch.float16, device=a.device)
    _mm[(triton.cdiv(m, 64), triton.cdiv(n, 128))](a, b, c, m, n, k, BM=64, BN=128, BK=64, num_warps=4, num_stages=3)
    return c


def ref(a, b):
    return a @ b


def make_inputs():
    return [torch.randn(M, K).half(), torch.randn(K, N).half()]
'''


def test_tune_on_cpu_prunes_configs_over_the_targets_shared_memory_and_changes_nothing(tmp_path):
    path = write(tmp_path / "mm.py", MATMUL)
    before = path.read_text()
    proc = run_cli("optimize", str(path), "--mode", "tune", "--target", "sm_86", "--rounds", "1", "--candidates",
                   "40", "--apply", "--format", "json", "-q", timeout=900)
    assert proc.returncode == 1, proc.stderr[-2000:]
    p = json.loads(proc.stdout)
    assert not p["accepted"] and path.read_text() == before
    pruned = [c for c in p["candidates"] if c["reason"].startswith("pruned by the compile stage")]
    assert pruned and all("shared memory" in c["reason"] and "sm_86" in c["reason"] for c in pruned), p["candidates"]
    assert any(c["verdict"] == "not run" for c in p["candidates"])
    assert "no GPU" in p["summary"] and "nothing was changed" in p["summary"]
