"""VerdictCache: the key covers everything a verdict depends on; transient verdicts are not kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason, Verdict
from formalbench.store import RunStore, VerdictCache, connect, verdict_key

BASE = {
    "backend_version": "coqc 8.16.1",
    "policy": VerifierPolicy(),
    "kind": "proof",
    "original": "Theorem t : True.\nProof.\nAdmitted.\n",
    "candidate": "Theorem t : True.\nProof.\nexact I.\nQed.\n",
}


def test_key_changes_with_each_input_and_only_then():
    key = verdict_key(**BASE)
    assert key == verdict_key(**{**BASE, "policy": VerifierPolicy()})  # equal policy, equal key
    changed = [
        {"backend_version": "coqc 8.18.0"},
        {"policy": VerifierPolicy(forbid_warnings=True)},
        {"kind": "evaluation"},
        {"original": BASE["original"] + " "},
        {"candidate": BASE["candidate"].replace("exact I", "trivial")},
    ]
    keys = {verdict_key(**{**BASE, **change}) for change in changed}
    assert key not in keys and len(keys) == len(changed)
    # no ambiguity from concatenation: moving text between fields changes the key
    assert verdict_key("a", {}, "proof", "xy", "z") != verdict_key("a", {}, "proof", "x", "yz")


def test_round_trip_and_persistence(tmp_path: Path):
    path = tmp_path / "verdicts.sqlite"
    verdict = Verdict(passed=False, reasons=[Reason.compile_error], backend="coq", elapsed=0.4)
    key = VerdictCache.key(**BASE)
    with VerdictCache(path) as cache:
        assert cache.get(key) is None
        assert cache.put(key, verdict)
        assert cache.get(key) == verdict
        assert (cache.hits, cache.misses) == (1, 1)
    with VerdictCache(path) as reopened:
        assert reopened.get(key) == verdict and len(reopened) == 1


@pytest.mark.parametrize("reason", [Reason.timeout, Reason.out_of_memory, Reason.backend_crash])
def test_transient_verdicts_are_not_kept(tmp_path: Path, reason: Reason):
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        key = cache.key(**BASE)
        assert not cache.put(key, Verdict(passed=False, reasons=[reason]))
        assert cache.get(key) is None
        calls = []

        def compute() -> Verdict:
            calls.append(1)
            return Verdict(passed=False, reasons=[reason])

        cache.get_or_compute(key, compute)
        cache.get_or_compute(key, compute)
        assert len(calls) == 2  # recomputed: a retry may succeed


def test_get_or_compute_computes_once_and_shares_a_run_file(tmp_path: Path):
    path = tmp_path / "run.sqlite"
    RunStore(path).close()  # the run store and the cache can live in one file
    conn = connect(path)
    cache = VerdictCache(conn)
    calls = []

    def compute() -> Verdict:
        calls.append(1)
        return Verdict(passed=True)

    key = cache.key(**BASE)
    assert cache.get_or_compute(key, compute).passed
    assert cache.get_or_compute(key, compute).passed
    assert len(calls) == 1
    cache.close()  # does not close a connection it was given
    assert conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 1
    components = dict(conn.execute("SELECT component, version FROM schema_version").fetchall())
    assert components == {"runs": 1, "verdict_cache": 1}
    conn.close()
