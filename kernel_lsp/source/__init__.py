"""The parent's view of a file, by AST only (never imports torch or the user's code): kernels and launch
sites, the linked reference, the workspace modules a check depends on."""
