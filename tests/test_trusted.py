"""The folders the checker trusts (kernel_lsp/trusted.py): which `sandbox.writable` entries would let checked code write
there, symlinks resolved, and the players' own caches beside them."""

from __future__ import annotations

import os

from kernel_lsp.trusted import PLAYERS, default_locks_folder, player_cache_folders, trusted_folders, unsafe_writable


def _env(tmp_path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TRITON_CACHE_DIR": str(tmp_path / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "KERNEL_LSP_LOCKS_DIR": str(tmp_path / "locks"),
            "KERNEL_LSP_CEILINGS_DIR": str(tmp_path / "ceilings")}


def test_trusted_unsafe_writable_names_what_is_holds_or_lies_in_a_trusted_folder(tmp_path):
    env = _env(tmp_path)
    (tmp_path / "triton").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "triton")
    server = str(tmp_path / "server")
    unsafe = unsafe_writable([env["TRITON_CACHE_DIR"], str(tmp_path), f"{env['TRITON_CACHE_DIR']}/sub",
                              str(tmp_path / "home"), str(tmp_path / "home" / ".nv"), "/", str(tmp_path / "link"),
                              env["KERNEL_LSP_LOCKS_DIR"], env["KERNEL_LSP_CEILINGS_DIR"], f"{server}/x"],
                             env, {"the players' server": server})
    triton = os.path.realpath(env["TRITON_CACHE_DIR"])
    assert unsafe[env["TRITON_CACHE_DIR"]] == f"is Triton's compile cache ({triton})"
    assert unsafe[str(tmp_path)] == f"holds Triton's compile cache ({triton})"
    assert unsafe[f"{env['TRITON_CACHE_DIR']}/sub"] == f"lies in Triton's compile cache ({triton})"
    assert unsafe[str(tmp_path / "link")] == f"is Triton's compile cache ({triton})"  # through the symlink
    assert unsafe[str(tmp_path / "home" / ".nv")].startswith("is the CUDA driver's JIT cache")
    assert unsafe[str(tmp_path / "home")].startswith("holds ")
    assert unsafe[env["KERNEL_LSP_LOCKS_DIR"]].startswith("is the GPU leases")
    assert unsafe[env["KERNEL_LSP_CEILINGS_DIR"]].startswith("is the GPU's measured ceilings")
    assert unsafe[f"{server}/x"].startswith("lies in the players' server")
    assert "/" in unsafe and len(unsafe) == 10


def test_trusted_unsafe_writable_passes_the_players_own_folders_and_relative_ones(tmp_path):
    env = _env(tmp_path)
    own = list(player_cache_folders(env).values())
    safe = [*own, f"{own[0]}/sub", str(tmp_path / "data"), "out", "~/.triton", "out/in"]
    assert unsafe_writable(safe, env) == {}


def test_trusted_a_relative_entry_that_climbs_out_of_the_work_folder_is_refused(tmp_path):
    """A player's work folder is at the same depth on every check (<TMPDIR>/<base>/<player>/work): `../../../x`
    reaches the same folder beside them each time, Inductor's default cache among them."""
    unsafe = unsafe_writable(["../../../torchinductor_root", "out/../../x"], _env(tmp_path))
    assert set(unsafe) == {"../../../torchinductor_root", "out/../../x"}
    assert unsafe["out/../../x"] == "climbs out of the player's own work folder (`..`)"


def test_trusted_a_player_has_a_cuda_jit_cache_of_its_own(tmp_path):
    """The CUDA driver caches what it compiles from PTX and loads it again for whoever asks next: a player's driver
    keeps it in a folder of its own, which is none of the checker's."""
    env = _env(tmp_path)
    own = player_cache_folders(env)
    assert own["CUDA_CACHE_PATH"] == os.path.join(env["HOME"], ".nv", PLAYERS)
    assert set(own) == {"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH"}
    assert os.path.join(env["HOME"], ".nv") in trusted_folders(env).values()
    assert trusted_folders({**env, "CUDA_CACHE_PATH": "/cc"})["the CUDA driver's JIT cache (CUDA_CACHE_PATH)"] == "/cc"


def test_trusted_the_locks_folder_follows_the_environment(tmp_path):
    assert default_locks_folder({"KERNEL_LSP_LOCKS_DIR": "/l"}) == "/l"
    assert default_locks_folder({"XDG_RUNTIME_DIR": "/run/user/7"}) == "/run/user/7/kernel-lsp/gpu-locks"
    assert default_locks_folder({}).endswith(f"kernel-lsp-{os.getuid()}/gpu-locks")
