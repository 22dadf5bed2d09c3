"""The evidence runs: the implementation called in a fresh player on inputs it has not seen, on buffers refilled in
place, with its launches skipped or watched, and judged here (docs/verification.md, "The evidence runs").

The verifier's variants judge values; these runs judge where the values come from. Once a file passes the
verifier, a second player (a fresh process: nothing of the verifier's calls in its memory) imports the
implementation and is sent, through the wire (never a file), inputs A, B and D (fresh values of the same shapes),
C (A with only its later half changed) and S (A with a few elements from B, at positions drawn from the system's
randomness), and a larger set when the launcher's sizes suggest a cap. It calls the implementation on A; on A's
buffers refilled in place fourteen times (B, D, B, A, D, B, ... A, then S: REFILLS); on C; on A with every Triton
launch skipped and the tensors it was given poisoned; on A with each launch watched (player/evidence.py). The truth
and PyTorch's own result for each set are computed here and never leave this process. Findings:
- KL220: the implementation raises, launches nothing, does not complete, or computes a wrong result there;
- KL221: output elements that no Triton launch computed (the values are the same with every launch skipped,
  and change with the inputs): the kernel's work is discarded or partly replaced by PyTorch;
- KL206: a stale result for buffers refilled in place, for a few elements changed, or for inputs that differ
  only past their first elements (a cache keyed on an address, on part of the input, or replaying once an
  address repeats);
- KL200: wrong at the larger size (a launcher that caps its grid, say);
- KL222 (information): the evidence runs could not be made, and why.
Only gross errors count here (the verifier already judged the fine precision): an error no rounding explains.
"""

from __future__ import annotations

import os

from ....jobs import CheckJob
from ....model import Severity
from ...problem.errors import is_out_of_memory
from .judge import judged
from .sets import REFILL_BUDGET_S, REFILLS, TooLarge, prepare
from .soak import _said, held_outputs, soak

SOURCE = "kernel-lsp.rerun"


class EarlyPlayer:
    """The evidence runs' fresh player, started and its module loaded in a thread while the verifier runs: on a GPU
    the player's start (its CUDA context, the first exchange through device arenas) and the module's import take
    about a second that a save's verdict would otherwise wait for. `take()` gives the player (or raises what starting
    it raised); `discard()` ends it when no evidence runs follow."""

    def __init__(self, job: CheckJob, connect, device: str):
        import threading
        self._player, self._error, self._taken = None, None, False
        self._thread = threading.Thread(target=self._start, args=(job, connect, device), daemon=True,
                                        name="evidence-player")
        self._thread.start()

    def _start(self, job: CheckJob, connect, device: str) -> None:
        from ...player import Player
        try:
            self._player = Player(connect(device), device)
            self._player.load(job.path, job.source_override, knob_files=_knob_files(job), mode="evidence")
        except BaseException as e:  # handed to take(), in the thread that judges
            self._error = e

    def take(self):
        self._thread.join()
        self._taken = True
        if self._error is not None:
            if self._player is not None:
                self._player.close()
            raise self._error
        return self._player

    def discard(self) -> None:
        if self._taken:
            return
        self._thread.join()
        self._taken = True
        if self._player is not None:
            self._player.close()


def _knob_files(job: CheckJob) -> list[str]:
    """The files whose module-level sizes the player sets (the reference's, the input factory's)."""
    return sorted({os.path.realpath(job.link.reference), os.path.realpath(job.link.inputs_path or job.link.reference)})


def run_evidence(problem, job: CheckJob, rep, connect, device: str, cpu_sizes: dict[str, int],
                 values: bool = True, cpu_setting: dict | None = None, early: EarlyPlayer | None = None,
                 sign_free: list[str] | None = None) -> None:
    """Plan the sets, run them in a fresh player and judge what comes back; every finding goes to `rep`. What keeps
    the runs from being made (sizes that cannot be shrunk, a reference that rejects the sets) is KL222. `early`: the
    player started while the verifier ran (EarlyPlayer), else one is started here; one left untaken is the caller's
    to discard. `sign_free`: what the verifier found of the reference's sign-free calls (None: asked again)."""
    from ...player import Player, PlayerLost
    rep.w.stage("evidence", "fresh inputs, buffers refilled in place, launches skipped and watched")
    try:
        plan = prepare(job, problem, device, cpu_sizes, cpu_setting or {}, sign_free)
    except TooLarge as e:  # nothing of them was checked: a warning, so that a check that passes says so
        rep.add("KL222", f"the evidence runs were not made: {e}; launches, caches and larger sizes are not checked",
                source=SOURCE, severity=Severity.WARNING)
        return
    except Exception as e:
        text = str(e).splitlines()[0][:300] if str(e) else ""
        rep.add("KL222", f"the evidence runs could not be prepared: {type(e).__name__}: {text}", source=SOURCE)
        return
    where = "where it is called afresh (the evidence runs)"
    player = None
    rep.w.stage("evidence", "the runs, in a fresh player")
    try:
        if early is not None:
            player = early.take()
        else:
            player = Player(connect(device), device)
            player.load(job.path, job.source_override, knob_files=_knob_files(job), mode="evidence")
        impl = player.build(job.link.kind, "ModelNew" if job.link.kind == "kernelbench" else job.link.entry,
                            job.seed, plan["init"], plan["knobs"])
        runs = player.evidence(impl, plan["sets"], [list(r) for r in REFILLS], REFILL_BUDGET_S, job.seed,
                               plan["knobs"])
        found = judged(runs, plan["truth"], plan["random"] or not values, plan.get("signs", False))
        if not found and not plan["random"] and values:
            rep.w.stage("evidence", "outputs held across calls, and a soak of many calls")
            found = held_outputs(player, impl, plan) or soak(player, impl, plan, device)
    except PlayerLost as e:
        rep.add("KL302" if is_out_of_memory(e) else "KL220",
                f"the implementation does not complete {where}: {e}" + (f": {e.stderr}" if e.stderr else ""),
                source=SOURCE)
        return
    except Exception as e:  # it fails to import or build there (the verifier's player did both)
        rep.add("KL302" if is_out_of_memory(e) else "KL220", f"the implementation fails {where}: {_said(e)}",
                source=SOURCE)
        return
    finally:
        if player is not None:
            player.close()
    for code, message, data in found:
        rep.add(code, message, source=SOURCE, **data)
    rep.w.stat("rerun_runs", len(runs))
    rep.w.stat("rerun_elements", plan["elements"])
