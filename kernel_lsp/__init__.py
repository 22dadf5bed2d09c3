"""kernel-lsp: compile Triton kernels for any GPU target and verify them against PyTorch references."""

__version__ = "0.2.0"
