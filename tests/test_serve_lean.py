"""`formalbench serve --backend lean` for real: uvicorn on a loopback port, the Lean backend
behind it made as `check --backend lean` makes it, the REPL being the stand-in that replays
recorded real REPL sessions (tests/standins/fake_repl.py; no Lean toolchain runs here).

The toolchain is found the product's way: a stand-in `lake` on PATH answers `lake env
printenv`, and the Lake project's built REPL binary is a shim that starts the stand-in. The
service and `formalbench check --json --backend lean` are both started on it, and must give the
same verdicts; answers are read the way Kimina's clients read them (tests/test_serve.py's
models), and by formalbench's own `KiminaBackend`, whose strict verdicts through the service
must be the direct ones (the identity queries' answers are found by their positions, so this
also holds the service to Kimina's position convention).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from formalbench.backends.lean.kimina import KiminaBackend
from formalbench.checking.verifier import StrictVerifier
from tests.serve_helpers import KEY, SRC, Server, running
from tests.shared_data import FIXTURES, needs_shared
from tests.test_serve import kimina_valid

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
RECORDINGS = FIXTURES / "lean-repl"
AUTH = {"Authorization": f"Bearer {KEY}"}
ORIGINAL = "import Mathlib\n\ntheorem t (x : ℕ) (h : 0 < x) : x ≠ 0 := by\n  sorry\n"
GENUINE = ORIGINAL.replace("sorry", "omega")
# the recorded REPL sessions give this body its real answer: `sorry` at 1:36, a warning at 1:8
SORRY_TASK = "import Mathlib\n\ntheorem foo (x : Int) : x = x := by sorry\n"
CANDIDATES = {
    "genuine": GENUINE,
    # the statement weakened: the text layer sees it
    "changed": GENUINE.replace("x ≠ 0 :=", "True :=").replace("omega", "trivial"),
    # a change only Lean sees (the stand-in answers the identity query with `False`)
    "lean_sees": GENUINE.replace("omega", "omega -- fake:type=t=False"),
    # an axiom of its own, declared and used
    "axiom": GENUINE.replace("theorem t", "axiom cheat : False\n\ntheorem t").replace(
        "omega", "exact cheat.elim"
    ),
    # an axiom only the kernel reports (`#print axioms` answers it)
    "kernel_axiom": GENUINE.replace("omega", "omega -- fake:axioms=propext,cheat"),
}
SAME = ("passed", "reasons", "findings", "axioms", "targets", "kind", "backend", "static_only")


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def lean_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A Lake project whose built REPL is the stand-in, and a `lake` that answers `env
    printenv` as Lake does; `env` puts that `lake` first on PATH."""
    root = tmp_path_factory.mktemp("lean")
    project = root / "proj"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    (project / "lakefile.lean").write_text("import Lake\nopen Lake DSL\n\npackage «demo»\n")
    manifest = {
        "version": "1.1.0",
        "packagesDir": ".lake/packages",
        "packages": [
            {"name": "mathlib", "rev": "f897ebcf72cd16f89ab4577d0c826cd14afaafc7", "type": "git"},
            {"name": "REPL", "rev": "8948401ab", "type": "git"},
        ],
    }
    (project / "lake-manifest.json").write_text(json.dumps(manifest))
    argv = " ".join(f'"{a}"' for a in (sys.executable, FAKE, "--fixtures", RECORDINGS))
    repl = project / ".lake" / "packages" / "REPL" / ".lake" / "build" / "bin" / "repl"
    _executable(repl, f'#!/bin/sh\nexec {argv} "$@"\n')
    lake_path = f"LEAN_PATH={project}/.lake/build/lib/lean"
    _executable(
        root / "bin" / "lake",
        '#!/bin/sh\nif [ "$1 $2" = "env printenv" ]; then\n'
        f"echo '{lake_path}'\necho \"PATH=$PATH\"\nexit 0\nfi\nexit 99\n",
    )
    env = {"PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return {"root": root, "project": project, "env": env}


@pytest.fixture(scope="module")
def server(lean_env: dict[str, Any]) -> Any:
    args = ["--backend", "lean", "--lean-project", str(lean_env["project"]), "--workers", "2"]
    with running(lean_env["root"], *args, extra_env=lean_env["env"]) as s:
        yield s


def post(server: Server, path: str, body: Any) -> httpx.Response:
    return httpx.post(server.url + path, json=body, headers=AUTH, timeout=120)


def cli_check(lean_env: dict[str, Any], name: str, candidate: str, original: str) -> dict:
    """`formalbench check --json --backend lean` on the same project and stand-in."""
    folder = lean_env["root"] / "cli"
    folder.mkdir(exist_ok=True)
    cand, orig = folder / f"{name}.lean", folder / f"{name}.orig.lean"
    cand.write_text(candidate, encoding="utf-8")
    orig.write_text(original, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(SRC), **lean_env["env"])
    argv = [sys.executable, "-m", "formalbench", "check", str(cand), "--against", str(orig)]
    argv += ["--json", "--backend", "lean", "--lean-project", str(lean_env["project"])]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


@needs_shared
def test_compile_only_answers_are_kiminas_with_positions(server: Server) -> None:
    body = "def f : Nat := by sorry"  # recorded: tactic_sorry
    lead = "import Mathlib\nimport Aesop\n\n"  # Kimina runs these lines apart
    codes = [
        {"custom_id": "genuine", "proof": GENUINE},
        {"custom_id": "sorry", "proof": lead + body},
        {"custom_id": "moved", "proof": lead + "set_option maxHeartbeats 400000\n\n" + body},
        {"custom_id": "error", "proof": GENUINE.replace("omega", "omega -- fake:error-here")},
        *({"custom_id": k, "proof": v} for k, v in CANDIDATES.items() if k != "genuine"),
    ]
    answer = post(server, "/verify", {"codes": codes, "timeout": 60})
    assert answer.status_code == 200, answer.text
    results = {r["custom_id"]: r for r in answer.json()["results"]}
    valid = {name: kimina_valid(r) for name, r in results.items()}
    # compile only is Kimina's reading: a changed statement or an axiom of its own compiles
    assert valid == {"genuine": True, "sorry": False, "moved": False, "error": False,
                     "changed": True, "lean_sees": True, "axiom": True,
                     "kernel_axiom": True}, results  # fmt: skip
    assert all("verdict" not in r for r in results.values())
    recorded = (RECORDINGS / "tactic_sorry.expected.out").read_text(encoding="utf-8")
    reply = json.loads(recorded)
    response = results["sorry"]["response"]
    # the REPL's own reply, as Kimina passes it on: body-relative positions, goal, proof state
    assert response["sorries"] == reply["sorries"]
    assert response["messages"] == reply["messages"]
    # positions count from the first line after the imports, whatever comes before the body
    text = codes[2]["proof"]
    (hole,) = results["moved"]["response"]["sorries"]
    line = text.split("\n")[len(lead.split("\n")) - 1 + hole["pos"]["line"] - 1]
    assert line[hole["pos"]["column"] :].startswith("sorry") and hole["goal"] == "⊢ Nat"
    (error,) = [m for m in results["error"]["response"]["messages"] if m["severity"] == "error"]
    at = GENUINE.split("\n")[2 + error["pos"]["line"] - 1]
    assert at.replace("omega", "omega -- fake:error-here")[error["pos"]["column"] :].startswith(
        "fake:error-here"
    )
    health = httpx.get(server.url + "/health").json()
    assert health["backend"].startswith("lean leanprover/lean4:v4.24.0; mathlib f897ebcf")
    metrics = httpx.get(server.url + "/metrics?format=json", headers=AUTH).json()
    assert metrics["sessions"] >= 1  # the warm REPLs


@needs_shared
def test_strict_route_is_the_cli_check(server: Server, lean_env: dict[str, Any]) -> None:
    task_id = post(server, "/tasks", {"original": ORIGINAL}).json()["task_id"]
    codes: list[dict[str, Any]] = [
        {"custom_id": name, "proof": text, "task_id": task_id} for name, text in CANDIDATES.items()
    ]
    codes.append({"custom_id": "sorry", "proof": SORRY_TASK, "original": SORRY_TASK})
    answer = post(server, "/verify", {"codes": codes, "timeout": 60, "disable_cache": True})
    assert answer.status_code == 200, answer.text
    results = {r["custom_id"]: r for r in answer.json()["results"]}
    passed = {name: r["verdict"]["passed"] for name, r in results.items()}
    assert passed == {"genuine": True, "changed": False, "lean_sees": False, "axiom": False,
                      "kernel_axiom": False, "sorry": False}, results  # fmt: skip
    assert results["lean_sees"]["verdict"]["reasons"] == ["statement_changed"]
    assert "cheat" in json.dumps(results["kernel_axiom"]["verdict"]["findings"])
    for name, result in results.items():
        # a client that reads only Kimina's fields gets the strict answer
        assert kimina_valid(result) is passed[name], result
        assert bool(result["error"]) is not passed[name]
        text = CANDIDATES.get(name, SORRY_TASK)
        original = ORIGINAL if name in CANDIDATES else SORRY_TASK
        cli = cli_check(lean_env, name, text, original)
        got = result["verdict"]
        assert {k: got[k] for k in SAME} == {k: cli[k] for k in SAME}, name
    metrics = httpx.get(server.url + "/metrics?format=json", headers=AUTH).json()
    assert metrics["checks_strict"] >= len(codes)


@needs_shared
def test_kimina_backend_through_the_service_gives_the_direct_verdicts(
    server: Server, lean_env: dict[str, Any]
) -> None:
    """formalbench's own Kimina client, pointed at the service's compile-only route: the
    strict verifier then asks its identity and axiom queries through it and must decide as
    it does on the Lean backend directly (the `check` verdicts)."""
    with KiminaBackend(server.url, api_key=KEY, workers=1, timeout=60) as kimina:
        verifier = StrictVerifier(kimina)
        for name, text in CANDIDATES.items():
            verdict = verifier.verify(ORIGINAL, text)
            cli = cli_check(lean_env, name, text, ORIGINAL)
            assert verdict.passed is cli["passed"], (name, verdict.findings)
            assert [r.value for r in verdict.reasons] == cli["reasons"], name


def test_no_lean_toolchain_is_one_line_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {
        "PATH": str(empty),
        "HOME": str(tmp_path),
        "ELAN_HOME": str(tmp_path / "elan"),
        "PYTHONPATH": str(SRC),
    }
    argv = [sys.executable, "-m", "formalbench", "serve", "--backend", "lean", "--port", "0"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("formalbench: error: --backend lean: Lean 4 is not installed")
    assert "--lean-project" in line and "kimina" not in line
    for wrong, why in (
        (["--backend", "lean", "--coq-project", str(tmp_path)], "--coq-project is for"),
        (["--lean-project", str(tmp_path)], "--lean-project is for --backend lean"),
        (["--backend", "kimina"], "serve checks with one of coq, lean"),
    ):
        done = subprocess.run(
            [*argv[:4], *wrong, "--port", "0"], capture_output=True, text=True, env=env,
            cwd=tmp_path, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and why in done.stderr and len(done.stderr.splitlines()) == 1


def test_strict_answer_moves_findings_and_sorries_to_kiminas_lines() -> None:
    """A verdict's Lean messages, its findings and its sorry warnings (as `sorries`) counted
    from the first line after the imports; the `verdict` object keeps the text's own lines."""
    from formalbench.core.records import Diagnostic, Finding, Language, Reason, Severity, Verdict
    from formalbench.service import answers

    text = "import Mathlib\n\ntheorem foo (x : Int) : x = x := by sorry\n"
    offset = answers.body_lines(text, Language.lean)
    assert offset == 2 and answers.body_lines(text, Language.coq) == 0
    warning = Diagnostic(severity=Severity.warning, message="declaration uses `sorry`",
                         line=3, column=8, end_line=3, end_column=11)  # fmt: skip
    finding = Finding(reason=Reason.forbidden_construct, message="sorry", line=3, column=36)
    verdict = Verdict(passed=False, reasons=[finding.reason], findings=[finding],
                      diagnostics=[warning])  # fmt: skip
    error, body = answers.strict(verdict, {"passed": False}, offset)
    assert error == "strict verdict: forbidden_construct: sorry"
    messages = body["response"]["messages"]
    assert [(m["severity"], m["pos"]) for m in messages] == [
        ("warning", {"line": 1, "column": 8}),
        ("error", {"line": 1, "column": 36}),
    ]
    assert body["response"]["sorries"] == [
        {"pos": {"line": 1, "column": 8}, "endPos": {"line": 1, "column": 11}, "goal": ""}
    ]


@needs_shared
def test_reward_on_a_lean_service(server: Server) -> None:
    from formalbench.service.reward import compute_score

    def answer(proof: str) -> str:
        return f"Here it is.\n\n```lean4\n{proof}```\n"

    info: dict[str, Any] = {}
    options = {"url": server.url, "api_key": KEY, "language": "lean"}
    assert compute_score(answer(GENUINE), ORIGINAL, extra_info=info, **options) == 1.0
    assert info["formalbench"]["passed"] is True
    cheat = answer(CANDIDATES["kernel_axiom"])
    assert compute_score(cheat, ORIGINAL, extra_info=info, **options) == 0.0
    assert info["formalbench"]["reasons"] == ["disallowed_axiom"]
