"""Launch-literal tuning: where the knobs are, which configs are tried, and the minimal edit (propose/tune.py);
and without a GPU, the tune loop prunes configs that overflow a target's shared memory and changes nothing, while
`optimize --mode tune` on a machine that cannot time anything is refused before any work."""

from __future__ import annotations

import difflib

from kernel_lsp.config import Settings, apply_overrides
from kernel_lsp.model import Proposal
from kernel_lsp.propose.loop import Proposer, ProposeRequest
from kernel_lsp.propose.tune import apply, configs, current, launch_sites
from kernel_lsp.run.executor import executor_for
from tests.conftest import FIXTURES, ROOT, run_cli, write

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


def _tune_for_sm86_accepts_nothing(path, candidates: int) -> dict:
    """The tune loop for sm_86, one round, where the checks run without a GPU (a runner on a machine without one):
    it compiles and prunes the configs, accepts nothing and leaves the file as it was. On this machine
    `optimize --mode tune` itself is refused before any work (test_tune_is_refused_where_nothing_can_be_timed), so
    the loop is driven as the CLI drives it, past that refusal."""
    before = path.read_text()
    settings = apply_overrides(Settings(), {"targets": ["sm_86"]})
    with executor_for(settings) as executor:
        proposer = Proposer(ProposeRequest("tune", path.resolve(), before, settings, path.parent, candidates=candidates,
                                           rounds=1, executor=executor))
        baseline = proposer.check(proposer.req.text, rerun=False)
        proposal = Proposal("tune", str(path), False, "")
        proposer.tune(baseline, proposal, on_gpu=False)
    assert not proposal.accepted and path.read_text() == before
    return proposal.to_dict()


def test_tune_is_refused_where_nothing_can_be_timed(tmp_path):
    """Issue 43 item 4: without a GPU or a runner nothing is timed, so no config can be accepted: `--mode tune` is
    refused at once (a usage error), not after compiling and verifying every config."""
    path = write(tmp_path / "mm.py", MATMUL)
    proc = run_cli("optimize", str(path), "--mode", "tune", "--device", "cpu", "--format", "json", timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert "--mode tune accepts only a candidate timed faster" in proc.stderr and "--runner" in proc.stderr


def test_tune_on_cpu_prunes_configs_over_the_targets_shared_memory_and_changes_nothing(tmp_path):
    p = _tune_for_sm86_accepts_nothing(write(tmp_path / "mm.py", MATMUL), 16)
    pruned = [c for c in p["candidates"] if c["reason"].startswith("pruned by the compile stage")]
    assert pruned and all("shared memory" in c["reason"] and "sm_86" in c["reason"] for c in pruned), p["candidates"]
    assert any(c["verdict"] == "not run" for c in p["candidates"])
    assert "no GPU" in p["summary"] and "nothing was changed" in p["summary"]


CAPPED = '''
import triton
import triton.language as tl

BLOCK_COLS = 1024
N = 4096


@triton.jit
def _rows(x_ptr, out_ptr, cols, BLOCK: tl.constexpr, TILE: tl.constexpr, WIDTH: tl.constexpr):
    pass


def run(x, out, rows, cols):
    _rows[(rows,)](x, out, cols, BLOCK=min(2048, triton.next_power_of_2(cols)), TILE=BLOCK_COLS, WIDTH=N,
                   num_warps=8)
    block = min(512, triton.next_power_of_2(cols))
    _rows[(rows, triton.cdiv(cols, block))](x, out, cols, BLOCK=block, TILE=BLOCK_COLS, WIDTH=64)


def make_inputs():
    return [N]
'''


def test_tune_moves_the_cap_of_a_size_following_tile_and_a_launch_only_module_constant():
    first, second = launch_sites(CAPPED)
    knobs = {k.name: k.value for k in first.knobs}
    # the cap of min(2048, ...), the module constant that only launches read; N is also a problem size: not a knob
    assert knobs == {"BLOCK": 2048, "TILE": 1024, "num_warps": 8, "num_stages": 3}, knobs
    new = apply(CAPPED, first, {"BLOCK": 4096, "TILE": 512})
    assert "BLOCK=min(4096, triton.next_power_of_2(cols)), TILE=BLOCK_COLS" in new and "BLOCK_COLS = 512" in new
    assert {k.name: k.value for k in second.knobs} == {"BLOCK": 512, "TILE": 1024, "WIDTH": 64, "num_warps": 4,
                                                        "num_stages": 3}
    new = apply(CAPPED, second, {"BLOCK": 256})
    assert "block = min(256, triton.next_power_of_2(cols))" in new and "triton.cdiv(cols, block)" in new


def test_tune_skips_a_name_assigned_twice_and_a_module_constant_a_local_shadows():
    src = CAPPED.replace("    block = min(512", "    block = 64\n    block = min(512")
    assert "BLOCK" not in {k.name for k in launch_sites(src)[1].knobs}
    src = CAPPED.replace("    block = min(512", "    BLOCK_COLS = cols // 2\n    block = min(512")
    assert "TILE" not in {k.name for k in launch_sites(src)[1].knobs}  # the launch sees the local, not 1024


# conv1d as it was until session 10 (a five-entry autotune list of tl.dot tiles): the tuner's autotune-list case
CONV1D = (FIXTURES / "tune" / "conv1d_autotune_list.py").read_text()


def test_tune_reads_an_autotune_list_and_adds_one_neighbouring_entry_after_the_first():
    (site,) = launch_sites(CONV1D)
    assert site.kernel == "_conv1d_kernel" and len(site.entries) == 5
    assert site.entries[0] == {"BO": 128, "BL": 64, "BC": 32, "num_warps": 4, "num_stages": 1}
    cs = configs(site, limit=64)
    assert cs and all(c not in site.entries for c in cs) and len({tuple(c.items()) for c in cs}) == len(cs)
    # neighbours of the second entry come first: round 2 climbs from the entry this tuner put there
    second = site.entries[1]
    assert sum(cs[0][k] != second[k] for k in second) == 1
    new = apply(CONV1D, site, cs[0])
    diff = [ln for ln in difflib.ndiff(CONV1D.splitlines(), new.splitlines()) if ln[:2] in ("+ ", "- ")]
    added = new.splitlines()[10]  # after the first entry (line 10)
    assert diff == ["+ " + added], diff  # one line added, nothing else touched
    assert added.startswith('        triton.Config({"BO": ') and added.endswith("),"), added
    (again,) = launch_sites(new)
    assert again.entries[1] == cs[0] and len(again.entries) == 6


def test_tune_adds_to_a_one_line_autotune_list_and_keeps_flags_as_written():
    src = (ROOT / "tests" / "corpus" / "bug_autotune_config_tail.py").read_text()
    (site,) = launch_sites(src)
    assert site.entries[0] == {"BLOCK": 256, "VEC": 1, "num_warps": 4, "num_stages": 3}
    assert all(c["VEC"] in (1, 2) for c in configs(site, 64))  # VEC is never scaled as a tile
    first = 'triton.Config({"BLOCK": 256, "VEC": 1}, num_warps=4)'
    second = 'triton.Config({"BLOCK": 128, "VEC": 1}, num_warps=4)'
    one_line = src.replace(f"configs=[\n        {first},\n        {second},", f"configs=[{first}, {second},")
    assert one_line != src
    (site,) = launch_sites(one_line)
    new = apply(one_line, site, {"BLOCK": 512, "VEC": 1, "num_warps": 8, "num_stages": 3})
    assert ('configs=[triton.Config({"BLOCK": 256, "VEC": 1}, num_warps=4), triton.Config({"BLOCK": 512, "VEC": 1}, '
            'num_warps=8, num_stages=3), triton.Config({"BLOCK": 128') in new
    compile(new, "f", "exec")


AUTOTUNED = MATMUL.replace('''@triton.jit
def _mm(''', '''@triton.autotune(
    configs=[
        triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def _mm(''').replace(
    "_mm[(triton.cdiv(m, 64), triton.cdiv(n, 128))](a, b, c, m, n, k, BM=64, BN=128, BK=64, num_warps=4, num_stages=3)",
    '_mm[lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))](a, b, c, m, n, k)')


def test_tune_on_cpu_prunes_autotune_entries_the_autotuner_would_skip_and_changes_nothing(tmp_path):
    p = _tune_for_sm86_accepts_nothing(write(tmp_path / "mm_autotuned.py", AUTOTUNED), 8)
    assert len(p["candidates"]) == 8
    pruned = [c for c in p["candidates"] if c["reason"].startswith("pruned by the compile stage")]
    # BM or BN 256, BK 128 or 5 stages beside the 128x128x64 entry need more than sm_86's 99 KiB
    assert pruned and all("shared memory" in c["reason"] and "autotuner will skip" in c["reason"] for c in pruned), \
        p["candidates"]
    assert any(c["verdict"] == "not run" for c in p["candidates"])


ROW_SUM = '''
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def run(x, out):
    _row_sum[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
'''


def test_tune_offers_a_cache_hint_on_loads_in_loops_first_and_inserts_it():
    (site,) = launch_sites(ROW_SUM)
    hint = next(k for k in site.knobs if k.name == "evict_first")
    assert hint.value == 0 and len(hint.inserts) == 1
    assert {"BLOCK": 1024, "num_warps": 4, "num_stages": 3, "evict_first": 1} in configs(site, limit=2)
    new = apply(ROW_SUM, site, {"evict_first": 1})
    assert 'tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0, eviction_policy="evict_first")' in new
    (again,) = launch_sites(new)
    assert "evict_first" not in {k.name for k in again.knobs}  # present now: nothing more to offer


def test_tune_offers_no_cache_hint_in_a_loop_with_tl_dot():
    (site,) = launch_sites(MATMUL)  # its K loop's tiles are read again by other programs
    assert not [k for k in site.knobs if k.text]


def test_tune_offers_flatten_on_a_persistent_loop_and_keeps_a_small_group_size_possible():
    src = (ROOT / "tasks" / "MatrixMultiply" / "matmul_fp16_triton.py").read_text().replace(", flatten=True", "")
    site = launch_sites(src)[0]
    knobs = {k.name: k for k in site.knobs}
    assert knobs["flatten"].value == 0 and knobs["GROUP"].value == 8
    cs = configs(site, limit=4)
    assert {**{k: v.value for k, v in knobs.items()}, "flatten": 1} in cs  # GROUP=8 kept: only the hint moves
    new = apply(src, site, {"flatten": 1})
    assert "for tile in tl.range(tl.program_id(0), num_m * num_n, NUM_SMS, flatten=True):" in new


def test_tune_on_cpu_compiles_the_cache_hint_candidate_and_changes_nothing(tmp_path):
    """row_sum as it was before the hint (session 7's file): the hint is among the first two candidates, it
    compiles for the target, and without a GPU to time it nothing is applied."""
    src = (ROOT / "tasks" / "Reduce" / "row_sum_triton.py").read_text()
    old = src.replace(',\n                    eviction_policy="evict_first")  # read once: first out of L2', ")")
    assert "eviction_policy" not in old
    write(tmp_path / "row_sum.py", (ROOT / "tasks" / "Reduce" / "row_sum.py").read_text())
    p = _tune_for_sm86_accepts_nothing(write(tmp_path / "row_sum_triton.py", old), 2)
    hinted = [c for c in p["candidates"] if "evict_first=1" in c["origin"]]
    assert hinted and hinted[0]["verdict"] == "not run", p["candidates"]


def test_tune_hints_only_the_loads_of_the_programs_own_data():
    """gemv: each program reads its rows of A once, but every program reads all of x; only A's load is a stream."""
    src = (ROOT / "tasks" / "LinearAlgebra" / "gemv_triton.py").read_text()
    src = src.replace(',\n                    eviction_policy="evict_first")  # A is read once; x by every program', ")")
    src = src.replace(', eviction_policy="evict_last")', ")")
    assert "eviction_policy" not in src
    (site,) = launch_sites(src)
    new = apply(src, site, {"evict_first": 1})
    hinted = [ln.strip() for ln in new.splitlines() if "evict_first" in ln]
    assert len(hinted) == 1 and "cols[None, :] < K), other=0.0" in hinted[0], hinted


def test_tune_offers_tf32x3_for_an_ieee_fp32_dot_and_replaces_the_precision():
    """An fp32 tl.dot spelled "ieee" runs on the FMA units; "tf32x3" keeps about fp32's error on tensor cores (the
    GPU's verification judges it). Offered as an off/on knob that replaces the string; not offered once present."""
    src = (ROOT / "tests" / "corpus" / "ok_matmul_fp32_ieee.py").read_text()
    (site,) = launch_sites(src)
    knob = next(k for k in site.knobs if k.name == "tf32x3")
    assert knob.value == 0 and len(knob.spans) == 1 and not knob.inserts
    assert {**current(site), "tf32x3": 1} in configs(site, limit=4)
    new = apply(src, site, {"tf32x3": 1})
    diff = [ln for ln in difflib.ndiff(src.splitlines(), new.splitlines()) if ln[:2] in ("+ ", "- ")]
    assert len(diff) == 2 and 'input_precision="tf32x3"' in diff[1] and 'input_precision="ieee"' in diff[0], diff
    (again,) = launch_sites(new)
    assert "tf32x3" not in {k.name for k in again.knobs}


def test_tune_tasks_picks_the_slow_ones_and_with_a_roofline_floor_the_far_ones():
    """benchmarks/tune_tasks.py: a task slower than torch.compile beyond doubt is tuned; with --below-roofline, so
    is a fast one far from its roofline (embedding_bag_sum was 2.83x torch.compile at 28% and gained 1.43x from
    its constants alone), and one near its roofline or without a measurement is not."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("tune_tasks", ROOT / "benchmarks" / "tune_tasks.py")
    tune_tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tune_tasks)

    def task(path, low, high, percent):
        m = {"speedups": [{"against": "eager", "low": 2.0, "high": 3.0},
                          {"against": "torch.compile", "low": low, "high": high}], "roofline": {"percent": percent}}
        return {"path": path, "kernels": {"k": {"measurement": m}}}
    doc = {"files": [task("slow.py", 0.8, 0.9, 95.0), task("far.py", 2.7, 2.9, 28.0), task("near.py", 0.95, 1.05, 97.0),
                     {"path": "unmeasured.py", "kernels": {"k": {"measurement": None}}}]}
    assert tune_tasks.slow_tasks(doc) == ["slow.py"]
    assert tune_tasks.slow_tasks(doc, 60.0) == ["slow.py", "far.py"]
