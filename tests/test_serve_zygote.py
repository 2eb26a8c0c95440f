"""`formalbench serve --zygote` on rocq-9.2: candidates compile and replay through warm fork
servers (backends/coq_zygote.py), and the strict verdicts are still `check --json`'s, attacks
included; the zygotes are the service's children and leave with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from formalbench.backends import coq_zygote
from formalbench.toolchains.toolchain import resolve
from tests.processes import naming
from tests.serve_helpers import KEY, SRC, Server, check_json, running
from tests.test_coq_identity_attacks import ATTACKS, GENUINE

pytestmark = pytest.mark.rocq

HEADER = "Require Import Arith.\n"  # a header the zygote takes (plain Requires)
CASES = {
    "Time Notation": ATTACKS["Time Notation"],
    "Time Variable (global assumption)": ATTACKS["Time Variable (global assumption)"],
    "genuine: a helper module before the target": GENUINE["a helper module before the target"],
}


def _zygotes(server: Server) -> list[str]:
    """The command lines of the service's zygote processes (their folder names its pid)."""
    return list(naming(f"formalbench-zygote-{server.proc.pid}-").values())


def test_strict_verdicts_through_zygotes_are_those_of_check(tmp_path: Path) -> None:
    if not coq_zygote.supported(resolve("rocq-9.2")):
        pytest.skip("the zygote is written for rocq-9.2")
    cases = {name: (HEADER + o, HEADER + c) for name, (o, c) in CASES.items()}
    expected = {}
    for i, (name, (original, candidate)) in enumerate(sorted(cases.items())):
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        expected[name] = check_json(folder, original, candidate, toolchain="rocq-9.2")
    with running(  # no flag: serve's default for Coq is through zygotes
        tmp_path, "--workers", "2", extra_env={"FORMALBENCH_TOOLCHAIN": "rocq-9.2"}
    ) as server:
        codes = [
            {"custom_id": name, "proof": candidate, "original": original}
            for name, (original, candidate) in cases.items()
        ]
        answer = httpx.post(
            f"{server.url}/verify",
            json={"codes": codes, "disable_cache": True},
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=600,
        )
        assert answer.status_code == 200, answer.text
        zygotes = _zygotes(server)
    results = answer.json()["results"]
    assert {r["custom_id"] for r in results} == set(cases)
    for result in results:
        want, got = expected[result["custom_id"]], result["verdict"]
        for key in ("passed", "reasons", "targets", "kind", "axioms"):
            assert got[key] == want[key], (result["custom_id"], key, got[key], want[key])
        assert bool(result["error"]) == (not want["passed"])
    assert sum(r["verdict"]["passed"] for r in results) == 1
    assert any("fb_zygote" in z for z in zygotes), zygotes  # the compile went through one
    assert not _zygotes(server)  # and none outlives the service


def test_no_zygote_compiles_cold(tmp_path: Path) -> None:
    if not coq_zygote.supported(resolve("rocq-9.2")):
        pytest.skip("the zygote is written for rocq-9.2")
    original, candidate = (HEADER + t for t in CASES["Time Notation"])
    env = {"FORMALBENCH_TOOLCHAIN": "rocq-9.2", "FORMALBENCH_COQ_ZYGOTE": "1"}
    with running(tmp_path, "--no-zygote", "--workers", "1", extra_env=env) as server:
        answer = httpx.post(
            f"{server.url}/verify",
            json={"codes": [{"custom_id": "a", "proof": candidate, "original": original}]},
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=600,
        )
        assert answer.status_code == 200, answer.text
        zygotes = _zygotes(server)
    (result,) = answer.json()["results"]
    assert "verdict" in result and result["verdict"]["passed"] is False
    assert zygotes == []  # the flag wins over the environment


def test_zygote_is_refused_for_lean(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "formalbench", "serve", "--backend", "lean", "--zygote"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert out.returncode == 2
    assert "--zygote is for --backend coq" in out.stderr
