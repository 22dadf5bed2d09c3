"""A model's parameters and buffers moved off their initial values, the same way in the checker (the reference) and
in the player (the implementation): the verifier's `parameters` variant; and its modules' training modes as built,
put back for the `train-mode` variant. Torch only; imports nothing of kernel_lsp."""

from __future__ import annotations


def perturb(model, seed: int, names: dict[str, list[int]] | set[str], mode: str = "scale") -> list[str]:
    """Each float parameter and buffer named in `names` (and, given shapes, of that shape) scaled by a factor drawn in [0.5, 1.5] per element and, where
    it is zero, given a small value, from a generator seeded by `seed` and the tensor's name: two models with the
    same values before are the same after. Running variances stay positive. `mode="pow2"`: instead, each nonzero
    element moved to the power of two nearest it, its sign kept (scales a reference divides by then make exact
    rounding ties possible: the verifier's `ties` variant). Returns the names moved."""
    import zlib

    import torch
    moved = []
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if name not in names or not t.is_floating_point() or t.numel() == 0:
                continue
            if isinstance(names, dict) and list(t.shape) != list(names[name]):
                continue
            gen = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
            scale = torch.empty(t.shape, dtype=torch.float64).uniform_(0.5, 1.5, generator=gen)
            bump = 0.1 * torch.randn(t.shape, dtype=torch.float64, generator=gen)
            value = t.detach().cpu().double()
            if mode == "pow2":
                power = torch.exp2(torch.floor(torch.log2(value.abs()) + 0.5))
                value = torch.where(torch.isfinite(value) & (value != 0), torch.sign(value) * power, value)
            else:
                value = value * scale + torch.where(value == 0, bump, torch.zeros_like(bump))
            if "var" in name.rsplit(".", 1)[-1]:
                value = value.abs().clamp_min(1e-3)
            t.copy_(value.to(t.dtype))
            moved.append(name)
    return moved


def float_state(model) -> dict[str, list[int]]:
    """The names and shapes of a model's float parameters and buffers."""
    return {name: list(t.shape) for name, t in list(model.named_parameters()) + list(model.named_buffers())
            if t.is_floating_point() and t.numel()}


def training_modes(model) -> list[bool]:
    """Each module's training flag, in `model.modules()` order (taken as built, before the checks' eval())."""
    return [m.training for m in model.modules()]


def train_as_built(model, modes: list[bool] | None) -> None:
    """Each module of the model in the training mode `training_modes` took, as built (a user's `ModelNew(...)` is
    called so); all of them in training mode where none were taken or its modules changed since."""
    modules = list(model.modules())
    if modes is None or len(modes) != len(modules):
        model.train()
        return
    for m, mode in zip(modules, modes):
        m.training = mode
