"""What pyproject.toml cannot say: the bundled tasks/ (a workspace of PyTorch references and Triton kernels) ship
inside the wheel as kernel_lsp/bundled_tasks, so `kernel-lsp init-tasks DIR` can copy them for a wheel user. The
clone keeps them at tasks/, where the README's `kernel-lsp check tasks/` finds them."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kernel_lsp", "kernel_lsp.*"]) + ["kernel_lsp.bundled_tasks"],
    package_dir={"kernel_lsp.bundled_tasks": "tasks"},
)
