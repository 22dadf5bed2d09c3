"""Sweep families for the cand13 candidates (device-side TMA descriptors). Import after benchmarks/cand11/sweep.py
to register them, or run them directly (this puts cand11 on the path and runs sweep's own FAMILIES dict):
    python benchmarks/cand13/families.py pointwise_dev bmm_tma
Every config fits the H200's 227 KB of shared memory per block: stages*(BM*BK + BK*BN)*2 bytes of operand
buffers plus the epilogue's BM*BN*2 (BN/2 with SUB); benchmarks/cand13/smem_check.py compiles each for sm_90
with the Triton at hand and prints what it takes."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cand11"))

from sweep import FAMILIES, sweep, T  # noqa: E402

C13 = "benchmarks/cand13/"

# (TM, TN, TK, TWARPS, TSTAGES); pointwise_conv2d: C_out = C_in = 256, HW = 4096, batch 32
PW_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3),
              (128, 256, 32, 8, 4), (128, 128, 128, 8, 2), (128, 128, 64, 8, 5), (256, 64, 64, 8, 4),
              (128, 256, 64, 8, 2), (64, 256, 64, 4, 4)]
# (BM, BN, BK, GROUP, WARPS, STAGES, SUB); bmm: batch 64, M = N = 1024, K = 512
BMM_CONFIGS = [(128, 256, 64, 8, 8, 4, True), (128, 256, 64, 8, 8, 3, True), (128, 256, 64, 8, 8, 3, False),
               (128, 256, 64, 4, 8, 4, True), (128, 256, 64, 16, 8, 4, True), (128, 256, 64, 1, 8, 4, True),
               (128, 128, 64, 8, 4, 4, True), (128, 128, 64, 8, 8, 5, False), (256, 128, 64, 8, 8, 4, True),
               (128, 256, 32, 8, 8, 6, True), (128, 128, 128, 8, 8, 3, True), (128, 128, 64, 8, 4, 6, False)]

FAMILIES["pointwise_dev"] = lambda: [sweep(C13 + "pointwise_tma_dev_triton", T + "Convolution/pointwise_conv2d.py",
                                           ["TM", "TN", "TK", "TWARPS", "TSTAGES"], PW_CONFIGS, max_err=0.25, apply=True)]
FAMILIES["bmm_tma"] = lambda: [sweep(C13 + "bmm_tma_triton", T + "LinearAlgebra/bmm.py",
                                     ["BM", "BN", "BK", "GROUP", "WARPS", "STAGES", "SUB"], BMM_CONFIGS, max_err=0.25,
                                     apply=True)]

if __name__ == "__main__":
    import traceback
    for fam in sys.argv[1:]:
        try:
            FAMILIES[fam]()
        except Exception:
            traceback.print_exc()
