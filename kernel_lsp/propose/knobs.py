"""The launch options tune searches (tune.py at launches, autotune_list.py in `@triton.autotune` lists): the values
it tries for warps and stages, the range of tile sizes, and Triton's own defaults where a launch or a Config omits
them."""

WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
TILE_RANGE = (16, 16384)  # tile sizes tried; a power of two outside it (VEC=1) is a flag or a factor, not a tile
DEFAULTS = {"num_warps": 4, "num_stages": 3}  # what Triton uses when a launch or a triton.Config omits them


def is_pow2(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def is_tile(v: int) -> bool:
    return is_pow2(v) and TILE_RANGE[0] <= v <= TILE_RANGE[1]
