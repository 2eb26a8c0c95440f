"""Coq verdicts under `--executor ray` take the identity route, run whole on the actor.

The Ray backend is not a coqc backend in the driver, so Coq verdicts used to be read from
queries appended in the candidate's own scope: `Time Notation "x + y" := (x * y)` before the
proof of `2 + 3 = 6` was accepted (12 of the 29 attacks of the two real-coqc attack suites
were, `bench/bench_ray_verdicts.py`). Real coqc on a local Ray, one actor, through `averify`
as `eval` calls it: that attack and the abbreviation attack (`Notation t := I` in a module
imported after the proof, judged with no forbidden words so that the assistant alone
decides) are refused, and a genuine proof with a notation after it is accepted."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Language, Reason, Verdict
from tests.test_coq_identity_attacks import ATTACKS, GENUINE

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

TASK = "Theorem t : True.\nProof.\nAdmitted.\n"
ABBREVIATION = (  # the assumptions query of `t` in the candidate's scope would follow `M.t`
    "Axiom ax : True.\nTheorem t : True.\nProof. exact ax. Qed.\n"
    "Module M.\nNotation t := I.\nEnd M.\nTime Import M.\n"
)


def test_coq_verdicts_under_ray_are_decided_by_the_identity_file() -> None:
    pytest.importorskip("ray")
    from formalbench.backends.ray_backend import RayBackend

    backend = RayBackend("coq", language=Language.coq, workers=1, timeout=120)
    try:
        verifier = StrictVerifier(backend)
        assistant_only = StrictVerifier(backend, VerifierPolicy(forbidden=[]))

        async def verdicts() -> list[Verdict]:
            return [
                await verifier.averify(*ATTACKS["Time Notation"]),
                await assistant_only.averify(TASK, ABBREVIATION),
                await verifier.averify(*GENUINE["Open Scope after the target"]),
            ]

        notation, abbreviation, genuine = asyncio.run(verdicts())
    finally:
        backend.close()
    assert notation.reasons == [Reason.statement_changed], notation.findings
    assert abbreviation.reasons == [Reason.disallowed_axiom], abbreviation.findings
    assert [f.subject for f in abbreviation.findings] == ["Candidate.ax"]
    assert genuine.passed, genuine.findings
    assert genuine.axioms == {"t": []} and genuine.backend == "ray:coq"
