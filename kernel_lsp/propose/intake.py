"""A round's candidates from the model (`Intake`, a mixin of loop.py's `Proposer`): the endpoint's client made from
the llm settings, the model asked, and each reply parsed (edits.py), refused when it touches the contract, screened
(screen.py) and reduced to its changes inside the implementation (region.py). Only what survives every step is
handed back to be run by a worker.

Its methods use the state `Proposer.__init__` sets (`req`, `contract`, `budget`, `per_round`) and
`Proposer._checkpoint`.
"""

from __future__ import annotations

from ..model import Candidate, FileReport, Proposal
from . import edits, prompt, region, screen
from .llm import LLM, MalformedReply


class Intake:
    """Asking the model for candidates, and each reply turned into a candidate or a failure (see the module
    docstring)."""

    def _ask(self, baseline: FileReport, failures: list[Candidate], round_no: int, proposal: Proposal,
             llm: LLM) -> list[tuple[str, str]]:
        """Candidates of one round as (origin, text); unparsable and blocked ones go to `proposal` and `failures`."""
        req = self.req
        reference = self.contract.reference_text
        out = []

        def failed(c: Candidate) -> None:
            proposal.candidates.append(c)
            failures.append(c)

        for i in range(self.per_round):
            self._checkpoint()
            why = self.budget.spent()
            if why:
                proposal.notes.append(f"stopped asking: {why}")
                break
            origin = f"llm round {round_no} #{i + 1}"
            asking = f"round {round_no}: asking {llm.describe()} for candidate {i + 1} of {self.per_round}"
            req.progress(asking)

            def waiting(seconds: float) -> None:
                left = self.budget.left_seconds()
                req.progress(f"{asking}: no reply yet after {seconds:.0f} s (at most {max(left, 0):.0f} s more, "
                             "llm.max-seconds)")
            try:
                reply = llm.complete(prompt.messages(req.mode, req.path.name, req.text, reference, baseline,
                                                     failures, req.kernel), self.budget, on_wait=waiting,
                                     cancel=req.cancel)
                text = edits.candidate_from_reply(req.text, reply.text)
            except (MalformedReply, edits.ReplyError) as e:
                failed(Candidate(origin, "unparsable", str(e)))
                continue
            refused = self.contract.refusals(text)
            if refused:
                failed(Candidate(origin, "blocked", "refused before it ran: it " + "; it ".join(refused)))
                continue
            # The whole reply is screened: what it tried outside the implementation is left out below, but a
            # model that asks for a subprocess anywhere is told so.
            blocked = screen.screen(req.text, text)
            if blocked:
                failed(Candidate(origin, "blocked", "the static screen refused it: " + "; ".join(blocked)))
                continue
            try:
                reduced = region.reduce(self.contract, text)
            except region.Unreducible as e:
                failed(Candidate(origin, "blocked", f"its changes to the implementation cannot be told apart from "
                                                    f"the rest: {e}"))
                continue
            if reduced.left_out:
                proposal.notes.append(f"{origin}: {reduced.left_out} changed line(s) of the reply outside the "
                                      "implementation (comments, docstrings, imports, the reference, other code) "
                                      "were left as the file has them")
            if reduced.text == req.text:
                failed(Candidate(origin, "rejected", "the reply changes nothing" +
                                 (" inside the implementation" if reduced.left_out else "")))
                continue
            out.append((origin, reduced.text))
        return out

    def _llm(self) -> LLM:
        llm = self.req.settings.llm
        return LLM(llm.endpoint, llm.model, llm.api_key_env, llm.temperature)
