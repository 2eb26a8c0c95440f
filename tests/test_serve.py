"""`formalbench serve` for real: uvicorn on a free loopback port, the host's coqc behind it.

The compatibility tests speak Kimina Lean Server's documented API with plain httpx (request
bodies and the "valid" reading of an answer as Kimina's README and client define them), not
with our client; the strict-route tests compare the service's verdicts with `formalbench check
--json` on red-team candidates of `test_coq_identity_attacks`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, NotRequired

import httpx
import pytest
from pydantic import BaseModel, model_validator
from typing_extensions import TypedDict

from tests.serve_helpers import KEY, SRC, Server, check_json, running
from tests.test_coq_identity_attacks import ATTACKS, GENUINE

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

TASK = "Theorem t : 2 + 3 = 5.\nProof.\nAdmitted.\n"
PROOF = "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("serve"), "--workers", "2", "--queue", "16") as s:
        yield s


def post(server: Server, path: str, body: Any, **kw: Any) -> httpx.Response:
    headers = kw.pop("headers", AUTH)
    return httpx.post(server.url + path, json=body, headers=headers, timeout=300, **kw)


# Kimina's documented answer, as its client validates it (app/schemas.py and
# client/kimina_client/models.py of project-numina/kimina-lean-server, written here from the
# field lists): a result needs `error` or `response`; a response is the Lean REPL's command
# answer, `env` required, messages with a severity from four, positions as line/column.
class Pos(TypedDict):
    line: int
    column: int


class Message(TypedDict):
    severity: Literal["trace", "info", "warning", "error"]
    pos: Pos
    endPos: NotRequired[Pos | None]
    data: str


class Sorry(TypedDict):
    pos: Pos
    endPos: Pos
    goal: str


class CommandResponse(TypedDict):
    env: int
    messages: NotRequired[list[Message]]
    sorries: NotRequired[list[Sorry]]


class KiminaResult(BaseModel):
    time: float = 0.0
    error: str | None = None
    response: CommandResponse | None = None

    @model_validator(mode="before")
    @classmethod
    def error_or_response(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not (values.get("error") or values.get("response")):
            raise ValueError("either `error` or `response` must be set")
        return values


def kimina_valid(result: dict[str, Any]) -> bool:
    """Kimina's reading of one result: no error, no error message, no sorry (the result
    first parsed as Kimina's client parses it)."""
    KiminaResult.model_validate(result)
    if result.get("error"):
        return False
    response = result.get("response") or {}
    errors = [m for m in response.get("messages", []) if m.get("severity") == "error"]
    return not errors and not response.get("sorries")


def test_kimina_verify_and_check_shapes(server: Server) -> None:
    body = {
        "codes": [
            {"custom_id": "ok", "proof": PROOF},
            {"custom_id": 7, "code": "Theorem t : 2 + 3 = 6.\nProof. Admitted.\n"},
            {"custom_id": "bad", "proof": "Theorem t : 2 + 3 = 6.\nProof. reflexivity. Qed.\n"},
        ],
        "infotree_type": "original",
        "timeout": 60,
        "disable_cache": False,
    }
    answer = post(server, "/verify", body)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [r["custom_id"] for r in results] == ["ok", "7", "bad"]
    assert [kimina_valid(r) for r in results] == [True, False, False]
    assert results[1]["response"]["sorries"], results[1]  # Admitted is a sorry
    assert any(m["severity"] == "error" for m in results[2]["response"]["messages"])
    assert all("verdict" not in r for r in results)  # no task given: compile only
    # Kimina's current client: POST /api/check {"snippets": [...], ...} -> {"results": [...]}
    snippets = {
        "snippets": [{"id": "s1", "code": PROOF}, {"id": "s2", "code": "Check nat."}],
        "timeout": 60,
        "debug": False,
        "reuse": True,
        "infotree": None,
    }
    answer = post(server, "/api/check", snippets)
    assert answer.status_code == 200, answer.text
    assert [(r["id"], kimina_valid(r)) for r in answer.json()["results"]] == [
        ("s1", True),
        ("s2", True),
    ]
    single = post(server, "/check", {"snippet": {"id": "one", "code": PROOF}}).json()
    assert single["id"] == "one" and kimina_valid(single)
    assert httpx.get(server.url + "/health").json()["status"] == "ok"  # no key needed


def test_strict_route_gives_the_verdict_and_sets_error(server: Server) -> None:
    task_id = post(server, "/tasks", {"original": TASK}).json()["task_id"]
    again = post(server, "/tasks", {"original": TASK}).json()["task_id"]
    assert task_id == again and task_id.startswith("task-")
    codes = [
        {"custom_id": "genuine", "proof": PROOF, "task_id": task_id},
        {"custom_id": "axiom", "proof": "Axiom h : False.\n" + PROOF, "original": TASK},
        {
            "custom_id": "other statement",
            "proof": PROOF.replace("2 + 3 = 5", "3 + 2 = 5"),
            "task_id": task_id,
        },
        {"custom_id": "unknown", "proof": PROOF, "task_id": "task-000"},
    ]
    results = post(server, "/verify", {"codes": codes}).json()["results"]
    genuine, axiom, other, unknown = results
    assert genuine["verdict"]["passed"] and kimina_valid(genuine), genuine
    assert genuine["verdict"]["targets"] == ["t"] and genuine["verdict"]["toolchain"]
    for refused in (axiom, other):
        assert refused["verdict"]["passed"] is False
        assert refused["error"].startswith("strict verdict: ")
        assert not kimina_valid(refused)
    assert "missing_target" in other["verdict"]["reasons"] or "statement_changed" in other["error"]
    assert "unknown task_id" in unknown["error"] and "verdict" not in unknown


CASES = {
    **{
        name: ATTACKS[name]
        for name in (
            "Time Notation",
            "Time Variable (global assumption)",
            "Time Local Open Scope",
            "Proof term. swallowing a command",
        )
    },
    "genuine: a helper module before the target": GENUINE["a helper module before the target"],
}


def test_red_team_candidates_get_the_verdicts_of_check(server: Server, tmp_path: Path) -> None:
    codes = []
    expected = {}
    for i, (name, (original, candidate)) in enumerate(sorted(CASES.items())):
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        # the toolchain the test service runs on (serve_helpers): the same Coq decides
        expected[name] = check_json(folder, original, candidate)
        codes.append({"custom_id": name, "proof": candidate, "original": original})
    results = post(server, "/verify", {"codes": codes, "disable_cache": True}).json()["results"]
    assert len(results) == len(CASES)
    for result in results:
        want, got = expected[result["custom_id"]], result["verdict"]
        for key in ("passed", "reasons", "targets", "kind", "axioms"):
            assert got[key] == want[key], (result["custom_id"], key, got[key], want[key])
        assert [(f["reason"], f["subject"]) for f in got["findings"]] == [
            (f["reason"], f["subject"]) for f in want["findings"]
        ], result["custom_id"]
        assert bool(result["error"]) == (not want["passed"])
    assert sum(r["verdict"]["passed"] for r in results) == 1


def test_cache_hits_and_disable_cache(server: Server) -> None:
    def hits() -> int:
        return int(
            httpx.get(server.url + "/metrics?format=json", headers=AUTH).json()["cache_hits"]
        )

    code = {
        "custom_id": "c",
        "proof": PROOF.replace("reflexivity", "simpl; reflexivity"),
        "original": TASK,
    }
    first = post(server, "/verify", {"codes": [code]}).json()["results"][0]
    before = hits()
    second = post(server, "/verify", {"codes": [code]}).json()["results"][0]
    assert hits() == before + 1
    assert second["verdict"]["passed"] == first["verdict"]["passed"] is True
    post(server, "/verify", {"codes": [code], "disable_cache": True})
    assert hits() == before + 1  # not read from the cache
    text = httpx.get(server.url + "/metrics", headers=AUTH).text
    assert "formalbench_serve_queue_length 0" in text and "formalbench_serve_sessions" in text


def test_key_limits_and_bad_requests(server: Server) -> None:
    assert (
        post(
            server, "/verify", {"codes": [{"custom_id": 1, "proof": PROOF}]}, headers={}
        ).status_code
        == 401
    )
    assert post(server, "/verify", {"codes": []}, headers={"X-API-Key": "wrong"}).status_code == 401
    bad = httpx.post(server.url + "/verify", content=b"{not json", headers=AUTH)
    assert bad.status_code == 422 and "\n" not in bad.json()["detail"]
    both = post(
        server,
        "/verify",
        {"codes": [{"custom_id": 1, "proof": PROOF, "original": TASK, "task_id": "task-1"}]},
    )
    assert both.status_code == 422
    too_many = post(
        server, "/verify", {"codes": [{"custom_id": i, "proof": PROOF} for i in range(17)]}
    )
    assert too_many.status_code == 413
    huge = post(
        server, "/verify", {"codes": [{"custom_id": 1, "proof": "(*" + "x" * (17 << 20) + "*)"}]}
    )
    assert huge.status_code == 413
    assert huge.headers["x-request-id"]
    logged = [
        json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")
    ]
    assert any(e["event"] == "request" and e["status"] == 413 for e in logged)


def test_our_client_and_the_reward(server: Server) -> None:
    from formalbench.service.client import VerifierClient
    from formalbench.service.reward import compute_score

    async def go() -> list[dict[str, Any]]:
        async with VerifierClient(server.url, api_key=KEY, batch_size=2) as client:
            task_id = await client.register(TASK)
            items = [{"custom_id": str(i), "proof": PROOF, "task_id": task_id} for i in range(3)]
            items.append({"custom_id": "3", "proof": "Check nat."})
            return await client.verify(items)

    results = asyncio.run(go())
    assert [r["custom_id"] for r in results] == ["0", "1", "2", "3"]
    assert all(r["verdict"]["passed"] for r in results[:3]) and "verdict" not in results[3]
    info: dict[str, Any] = {}
    answer = f"Here it is:\n```coq\n{PROOF}```\n"
    assert compute_score(answer, TASK, extra_info=info, url=server.url, api_key=KEY) == 1.0
    assert info["formalbench"]["passed"] is True
    cheat = f"```coq\nAxiom h : False.\n{PROOF}```"
    assert compute_score(cheat, TASK, extra_info=info, url=server.url, api_key=KEY) == 0.0
    assert info["formalbench"]["reasons"] == ["forbidden_construct"]


def test_off_loopback_needs_a_key() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "formalbench", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC), "FORMALBENCH_SERVE_API_KEY": ""},
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--api-key" in out.stderr


def test_the_readme_reward_example_prints_what_the_readme_says(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (SRC.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Use as a reward", 1)[1].split("\n### ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed = section.split("```text\n", 1)[1].split("```", 1)[0]
    monkeypatch.setenv("FORMALBENCH_SERVE_URL", server.url)
    monkeypatch.setenv("FORMALBENCH_SERVE_API_KEY", KEY)
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert capsys.readouterr().out == printed
    # "the same four through Kimina's plain /verify would score 1, 1, 1 and 0"
    codes = [{"custom_id": k, "proof": v} for k, v in scope["answers"].items()]
    results = post(server, "/verify", {"codes": codes}).json()["results"]
    assert [kimina_valid(r) for r in results] == [True, True, True, False]
    assert "would score 1, 1, 1 and 0" in " ".join(section.split())


def test_identical_items_in_flight_are_checked_once(server: Server) -> None:
    def shared() -> int:
        values = httpx.get(server.url + "/metrics?format=json", headers=AUTH).json()
        return int(values["checks_shared"])

    proof = PROOF.replace("reflexivity", "cbn; reflexivity")  # not yet in the cache
    before = shared()
    codes = [{"custom_id": i, "proof": proof, "original": TASK} for i in range(2)]
    first, second = post(server, "/verify", {"codes": codes}).json()["results"]
    assert shared() == before + 1
    assert first["verdict"]["passed"] is second["verdict"]["passed"] is True
    assert (first["custom_id"], second["custom_id"]) == ("0", "1")
