"""Compile the cand13 kernels for sm_90 here (no GPU), as their launches at the task's own size compile them, and
count the TMA and wgmma instructions (benchmarks/cand11/sass_counts.py's recorder and compile).
    python benchmarks/cand13/sass_counts.py"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cand11"))

from sass_counts import main  # noqa: E402

if __name__ == "__main__":
    main([
        ("tasks/Convolution/pointwise_conv2d.py", ["benchmarks/cand13/pointwise_tma_dev_triton.py"]),
        ("tasks/LinearAlgebra/bmm.py", ["benchmarks/cand13/bmm_tma_triton.py", "tasks/LinearAlgebra/bmm_triton.py"]),
    ])
