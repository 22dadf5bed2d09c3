"""What pyproject.toml cannot say: the bundled tasks/ (a workspace of PyTorch references and Triton kernels) ship
inside the wheel as kernel_lsp/bundled_tasks, so `kernel-lsp init-tasks DIR` can copy them for a wheel user. The
clone keeps them at tasks/, where the README's `kernel-lsp check tasks/` finds them.

Every folder that ships is named as a package, those without an __init__.py too (kernel_lsp/schemas, the task
folders): setuptools includes the files of a folder it does not know only with a "Package would be ignored"
warning per folder, and says it will stop. tests/test_packaging.py reads this list against the folders.
"""

from setuptools import find_namespace_packages, setup

NOT_PACKAGES = ["*__pycache__*"]
TASKS = ["kernel_lsp.bundled_tasks"] + [f"kernel_lsp.bundled_tasks.{p}"
                                        for p in find_namespace_packages("tasks", exclude=NOT_PACKAGES)]

setup(
    packages=find_namespace_packages(include=["kernel_lsp", "kernel_lsp.*"], exclude=NOT_PACKAGES) + TASKS,
    package_dir={"kernel_lsp.bundled_tasks": "tasks"},
)
