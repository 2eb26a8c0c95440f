"""`formalbench formalize` end to end: real coqc, real SQLite, real HTTP to a stand-in model.

The stand-in plays every role by reading the prompt: translator (first translations come in
one request of n samples with seed 0, re-translations with their own seed), repairer (the
prompt carries coqc's messages), labeller, decomposer, alignment judge and summariser. Its
answers are chosen so that one run goes through every path: an error fixed by feedback, a
reply with no code block, a block in the wrong language, a misaligned statement
re-translated from scratch, a decomposition that is unreadable once, and a judge whose
reply stays unreadable.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.pipelines.formalize import FormalizeConfig, load_metrics, run_formalize
from formalbench.store.formalize import FormalizeStore
from tests.standins.openai_server import CHAT, StandinServer

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
]

COMM_BAD = "Theorem add_comm_nat : forall n : nat, n + m = m + n.\nProof.\nAdmitted."
COMM_OK = "Theorem add_comm_nat : forall n m : nat, n + m = m + n.\nProof.\nAdmitted."
FIND_ONE_WAY = "Theorem find_three : forall n : nat, n + 2 = 5 -> n = 3.\nProof.\nAdmitted."
FIND_OK = "Theorem find_three : forall n : nat, n + 2 = 5 <-> n = 3.\nProof.\nAdmitted."
FIND_ODD = (
    "(* garbled *)\nTheorem find_three_b : forall n : nat, n + 2 = 5 <-> n = 3.\nProof.\nAdmitted."
)
DECOMPOSITION = {"data_type": "n: natural number", "conditions": [], "proof_goal": "n = 3"}
PROBLEMS = [
    {
        "id": "comm",
        "informal": "Show that adding natural numbers is commutative.",
        "category": "algebra",
    },
    {"id": "find", "informal": "Find every natural number n with n + 2 = 5.", "solution": "n = 3"},
]


def coq(code: str) -> str:
    return f"Here it is.\n```coq\n{code}\n```\n"


def system(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def last_user(body: dict[str, Any]) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


def responder(body: dict[str, Any]) -> list[str]:
    """Answer by role, read from the prompt."""
    sys_text, user, model = system(body), last_user(body), body["model"]
    n, seed = int(body.get("n") or 1), body.get("seed")
    if "You sort mathematics problems" in sys_text:
        return ["Number Theory."]
    if "careful comparison with formal statements" in sys_text:
        if "could not be used" in user:  # the retry after an unreadable first answer
            return [json.dumps(DECOMPOSITION)]
        return ["I think the goal is n = 3"]  # no JSON: unreadable
    if "You check whether a formal statement" in sys_text:
        if "garbled" in body["messages"][1]["content"]:
            return ["not json, sorry"]
        faithful = "<->" in user or "m + n" in user
        return [
            json.dumps(
                {"aligned": faithful, "problems": [] if faithful else ["only one direction"]}
            )
        ]
    if "You help a person who reviews" in sys_text:
        keys = sorted(set(re.findall(r"Candidate (C\d+) \(", user)))
        ranking = [
            {"candidate": k, "rank": i + 1, "verdict": f"verdict {k}"} for i, k in enumerate(keys)
        ]
        return [json.dumps({"ranking": ranking, "summary": "start from C1"})]
    if "It was rejected:" in user:  # a repair round
        if "comm" in user or "commutative" in user:
            return [coq(COMM_OK)]
        return [coq(FIND_OK)]
    if "You turn competition mathematics problems" in sys_text:  # a translation
        if "commutative" in user:
            if model == "alpha":
                return [coq(COMM_BAD), coq(COMM_OK)][:n]
            return ["I would state it with nat.", "```lean\ntheorem x : 1 = 1 := by sorry\n```"][:n]
        if model == "alpha":
            return [coq(FIND_ONE_WAY)] * n if seed == 0 else [coq(FIND_OK)] * n
        return [coq(FIND_ODD)] * n
    return ["?"] * n


def write_problems(path: Path, rows: list[dict[str, Any]] = PROBLEMS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def make_config(
    server: StandinServer, problems: Path, context: Path, **extra: Any
) -> FormalizeConfig:
    specs = [f"openai:{m}@{server.base_url}" for m in ("alpha", "beta")]
    options = dict(
        problems=str(problems),
        models=specs,
        backend="coq",
        samples=2,
        repair_rounds=2,
        context_file=str(context),
        workers=2,
        timeout=30,
    )
    options.update(extra)
    return FormalizeConfig(**options)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer(models=("alpha", "beta")) as srv:
        srv.responder = responder
        yield srv


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    context = tmp_path / "context.txt"
    context.write_text("Lemma Nat.add_comm : forall n m, n + m = m + n.\n", encoding="utf-8")
    return write_problems(tmp_path / "problems.jsonl"), context


class Counts:
    """An observer that keeps what the progress bar would show."""

    def __init__(self) -> None:
        self.start: tuple[int, int] | None = None
        self.finished: list[str] = []

    def started(self, total: int, done: int) -> None:
        self.start = (total, done)

    def chain_done(self, candidate) -> None:
        self.finished.append(candidate.id)


def chat_bodies(server: StandinServer) -> list[dict[str, Any]]:
    return [s.body for s in server.requests if s.path == CHAT]


def test_whole_pipeline_feedback_realignment_formatting_and_rerun(server, inputs, tmp_path):
    problems, context = inputs
    config = make_config(server, problems, context)
    seen = Counts()
    result = run_formalize(config, tmp_path / "run", seen)
    assert (result.problems, result.finished, result.incomplete) == (2, 2, [])
    assert seen.start == (8, 0) and len(seen.finished) == 8  # 2 problems x 2 models x 2
    assert f"find/openai:alpha@{server.base_url}/0#t1" in seen.finished

    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        cands = {c.id: c for c in store.candidates()}
        alpha, beta = (f"openai:{m}@{server.base_url}" for m in ("alpha", "beta"))
        # compile feedback: coqc's message went into the repair prompt, the repair compiled
        first = cands[f"comm/{alpha}/0"]
        assert [r.compiled for r in first.rounds] == [False, True]
        assert "was not found in the current environment" in first.rounds[0].diagnostics[0].message
        repairs = [b for b in chat_bodies(server) if "It was rejected:" in last_user(b)]
        assert any("The reference m was not found" in last_user(b) for b in repairs)
        assert cands[f"comm/{alpha}/1"].rounds[0].compiled
        # formatting failures are recorded on the round, then repaired
        prose, wrong = cands[f"comm/{beta}/0"], cands[f"comm/{beta}/1"]
        assert "no fenced code block" in prose.rounds[0].format_failure
        assert "wrong language" in wrong.rounds[0].format_failure
        assert prose.compiled and wrong.compiled
        # the misaligned statement was re-translated from scratch, without the judgement
        one_way = cands[f"find/{alpha}/0"]
        assert one_way.compiled and not one_way.alignment.aligned
        assert "only one direction" in one_way.alignment.explanation
        again = cands[f"find/{alpha}/0#t1"]
        assert again.translation == 1 and again.alignment.aligned
        fresh = [
            b for b in chat_bodies(server) if b.get("seed") == 1000 and "n + 2 = 5" in last_user(b)
        ]
        assert len(fresh) == 1
        assert "only one direction" not in json.dumps(fresh[0]["messages"])
        assert "It was rejected" not in json.dumps(fresh[0]["messages"])
        # an unreadable judge is recorded, not taken as misaligned, not re-translated
        odd = cands[f"find/{beta}/0"]
        assert odd.alignment.error and "unreadable" in odd.alignment.error
        assert f"find/{beta}/0#t1" not in cands
        # the decomposition was unreadable once, then read on the retry
        decomposition = store.step_value("find", "decomposition")
        assert decomposition["attempts"] == 2 and decomposition["decomposition"] == DECOMPOSITION
        assert store.problem("find").category == "number_theory"
        summary = store.summary("find")
        assert {r.candidate_id for r in summary.ranking} == {
            c for c in cands if c.startswith("find/")
        }
        assert summary.text == "start from C1" and summary.keys
    # what a translator is shown: the category's context and, for a find problem, the answer
    translations = [b for b in chat_bodies(server) if "It was rejected:" not in last_user(b)]
    translations = [b for b in translations if "You turn competition" in system(b)]
    find_asks = [b for b in translations if "n + 2 = 5" in last_user(b)]
    assert find_asks and all("Answer: n = 3" in last_user(b) for b in find_asks)
    assert all("Answer:" not in last_user(b) for b in translations if "commutative" in last_user(b))
    assert all("Lemma Nat.add_comm : forall n m" in system(b) for b in translations)

    calls = server.count()
    seen = Counts()
    again = run_formalize(config, tmp_path / "run", seen)
    assert again.finished == 2 and server.count() == calls  # a rerun asks nothing
    assert seen.start == (8, 8) and seen.finished == []

    metrics = load_metrics(tmp_path / "run")
    assert (metrics.problems, metrics.compiled, metrics.aligned) == (2, 2, 2)
    by_model = {m.model: m for m in metrics.models}
    a, b = by_model["openai:alpha"], by_model["openai:beta"]
    assert a.spec == f"openai:alpha@{server.base_url}"
    # rates over the first translations; the two re-translations in columns of their own
    assert (a.candidates, a.compiled_round1, a.compiled) == (4, 3, 4)
    assert (a.compile_rate_round1, a.compile_rate, a.aligned, a.judged) == (0.75, 1.0, 2, 4)
    assert a.mean_rounds_to_compile == pytest.approx(5 / 4, abs=1e-3)
    assert (a.retranslations, a.retranslations_compiled, a.retranslations_aligned) == (2, 2, 2)
    assert (b.format_failures, b.compile_rate_round1, b.compile_rate) == (2, 0.5, 1.0)
    assert (b.judged, b.judge_errors, b.problems_aligned, b.retranslations) == (2, 2, 1, 0)

    review_the_run(tmp_path / "run", cands, f"find/{alpha}/0#t1", tmp_path)


def review_the_run(run: Path, cands: dict[str, Any], wanted: str, tmp_path: Path) -> None:
    """The dashboard over the run the pipeline made: every candidate listed, a re-check with
    the real coqc, an accepted statement, and an export the dataset loader reads."""
    from fastapi.testclient import TestClient

    from formalbench.dashboard.app import create_app
    from formalbench.datasets.loader import load_tasks
    from test_dashboard_app import form

    with TestClient(create_app(run, reviewer="ana")) as client:
        listing = client.get("/")
        assert listing.status_code == 200 and "comm" in listing.text and "find" in listing.text
        page = client.get("/p/find")
        assert page.status_code == 200
        shown = set(re.findall(r'data-candidate="([^"]+)"', html.unescape(page.text)))
        assert shown == {c for c in cands if c.startswith("find/")}
        # the reviewer takes the re-translated, aligned statement into the editor
        fields = form(client.get("/p/find", params={"candidate": wanted}).text)
        assert fields["candidate_id"] == wanted and "<->" in fields["code"]
        broken = client.post("/check", data=dict(fields, code=fields["code"].replace(".", "", 1)))
        assert broken.status_code == 200 and "Does not compile" in broken.text
        checked = client.post("/check", data=fields)
        assert "<b>Compiles</b>" in checked.text
        accepted = client.post("/decide", data=dict(form(checked.text), action="accept"))
        assert accepted.status_code == 200 and "accepted by ana" in accepted.text
        export = client.get("/export.jsonl")
        assert export.status_code == 200
    path = tmp_path / "accepted.jsonl"
    path.write_text(export.text, encoding="utf-8")
    (task,) = load_tasks(path)
    assert task.id == "find" and task.informal.solution == "n = 3"
    assert "find_three" in task.source_text and "<->" in task.source_text
    assert task.trail["formalize"]["candidate"] == wanted
    assert task.trail["review"]["recheck"]["compiled"] is True


def test_a_candidate_that_never_compiles_gets_six_repairs(server, tmp_path):
    """IndiMathBench: the first translation, then up to 6 rounds fed with the errors."""
    problems = write_problems(tmp_path / "p.jsonl", PROBLEMS[:1])
    plain = responder
    server.responder = lambda body: (
        [coq(COMM_BAD)] * int(body.get("n") or 1)
        if "You turn competition" in system(body)
        else plain(body)
    )
    config = FormalizeConfig(
        problems=str(problems),
        models=[f"openai:alpha@{server.base_url}"],
        backend="coq",
        samples=1,
        context_items=0,
        workers=2,
        timeout=30,
    )
    assert config.repair_rounds == 6
    result = run_formalize(config, tmp_path / "run")
    assert result.finished == 1
    repairs = [b for b in chat_bodies(server) if "It was rejected:" in last_user(b)]
    assert len(repairs) == 6
    assert "This is repair 1 of at most 6." in last_user(repairs[0])
    assert "This is repair 6 of at most 6." in last_user(repairs[-1])
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        (cand,) = store.candidates("comm")
    assert [r.round for r in cand.rounds] == [1, 2, 3, 4, 5, 6, 7] and not cand.compiled


def test_resume_after_a_partial_run_repeats_no_model_call(server, inputs, tmp_path):
    problems, context = inputs
    full = run_formalize(make_config(server, problems, context), tmp_path / "full")
    assert full.finished == 2
    wanted = sorted(json.dumps(b, sort_keys=True) for b in chat_bodies(server))
    server.requests.clear()

    partial = run_formalize(
        make_config(server, problems, context, run_token_budget=2500, concurrency=1),
        tmp_path / "run",
    )
    assert partial.finished < 2 and partial.incomplete
    assert any("token budget" in why for why in partial.incomplete)
    assert 0 < len(chat_bodies(server)) < len(wanted)
    resumed = run_formalize(make_config(server, problems, context), tmp_path / "run")
    assert resumed.finished == 2
    seen = sorted(json.dumps(b, sort_keys=True) for b in chat_bodies(server))
    assert seen == wanted  # the same requests as one uninterrupted run, none twice


def test_a_kill_between_reply_and_compile_costs_no_request(server, inputs, tmp_path):
    problems, context = inputs
    config = make_config(server, problems, context)
    run_formalize(config, tmp_path / "run")
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        cid = f"comm/openai:alpha@{server.base_url}/0"
        cand = store.candidate(cid)
        # as if killed after the repair reply came back but before its compile was stored
        store.put_candidate(cand.model_copy(update={"rounds": cand.rounds[:1], "alignment": None}))
    with sqlite3.connect(tmp_path / "run" / "formalize.sqlite") as db:
        db.execute("DELETE FROM fz_summaries WHERE problem_id = 'comm'")
    calls = server.count()
    result = run_formalize(config, tmp_path / "run")
    assert result.finished == 2 and server.count() == calls
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        redone = store.candidate(cid)
        assert [r.compiled for r in redone.rounds] == [False, True] and redone.alignment.aligned


def test_cli_run_split_parts_and_report_json(server, tmp_path, monkeypatch):
    rows = [{"id": "pair", "informal": "Let n be natural. (a) Show n + 0 = n. (b) Show 0 + n = n."}]
    problems = write_problems(tmp_path / "p.jsonl", rows)
    plain = responder

    def splitting(body: dict[str, Any]) -> list[str]:
        sys_text = system(body)
        if "one question at a time" in sys_text:
            cut = {"shared": "Let n be natural.", "parts": ["Show n + 0 = n.", "Show 0 + n = n."]}
            return [json.dumps(cut)]
        if (
            "You turn competition mathematics problems" in sys_text
            and "It was rejected" not in last_user(body)
        ):
            goal = "n + 0 = n" if "n + 0 = n" in last_user(body) else "0 + n = n"
            return [coq(f"Theorem part : forall n : nat, {goal}.\nProof.\nAdmitted.")] * int(
                body["n"]
            )
        if "You check whether a formal statement" in sys_text:
            return ['```json\n{"aligned": true, "explanation": "same goal"}\n```']
        return plain(body)

    server.responder = splitting
    spec = f"openai:alpha@{server.base_url}"
    args = [
        "formalize",
        str(problems),
        "--model",
        spec,
        "--backend",
        "coq",
        "--samples",
        "1",
        "--split-parts",
        "--context-items",
        "0",
        "--run-dir",
        str(tmp_path / "run"),
        "--quiet",
    ]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert (data["problems"], data["compiled"], data["aligned"]) == (2, 2, 2)
    assert data["models"][0]["model"] == "openai:alpha"
    assert data["models"][0]["compile_rate_round1"] == 1.0
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        parts = store.problems()
        assert [p.id for p in parts] == ["pair#1", "pair#2"]
        assert (
            parts[0].informal.startswith("Let n be natural.")
            and parts[0].metadata["parent"] == "pair"
        )
    table = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert table.exit_code == 0 and "per model" in table.output


def test_bad_problem_lines_are_named_with_file_and_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "informal": "x"}\n{"id": "b"}\nnot json\n', encoding="utf-8")
    run = CliRunner().invoke(
        app, ["formalize", str(path), "--model", "openai:m@http://127.0.0.1:9/v1"]
    )
    assert run.exit_code == 2
    assert (
        f"{path}:2: missing `informal`" in run.output and f"{path}:3: not valid JSON" in run.output
    )


def test_unreachable_endpoint_is_one_error_before_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    problems = write_problems(tmp_path / "p.jsonl")
    args = [
        "formalize",
        str(problems),
        "--model",
        "openai:m@http://127.0.0.1:9/v1",
        "--backend",
        "coq",
        "--run-dir",
        str(tmp_path / "run"),
        "--quiet",
    ]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 2 and "127.0.0.1:9" in run.output
    assert not (tmp_path / "run" / "formalize.sqlite").exists()


def test_changed_settings_on_the_same_run_dir_are_refused(server, inputs, tmp_path):
    problems, context = inputs
    run_formalize(make_config(server, problems, context, samples=1), tmp_path / "run")
    from formalbench.core.errors import InputError

    with pytest.raises(InputError, match="samples"):
        run_formalize(make_config(server, problems, context, samples=2), tmp_path / "run")


LIBRARY = """(** Addition of natural numbers is commutative. *)
Lemma plus_swap : forall n m : nat, n + m = m + n.
Proof. Admitted.

(** Multiplication distributes over addition. *)
Lemma mult_spread : forall a b c : nat, a * (b + c) = a * b + a * c.
Proof. Admitted.
"""


def test_cli_embedding_retriever_gives_the_translator_its_context(server, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Swap.v").write_text(LIBRARY, encoding="utf-8")
    problems = write_problems(tmp_path / "p.jsonl", PROBLEMS[:1])
    base = ["formalize", str(problems), "--model", f"openai:alpha@{server.base_url}"]
    base += ["--backend", "coq", "--samples", "1", "--run-dir", str(tmp_path / "run"), "--quiet"]
    refused = CliRunner().invoke(app, [*base, "--retriever", "embed"])
    assert refused.exit_code == 2 and "--retriever embed needs --embed-model" in refused.output
    refused = CliRunner().invoke(app, [*base, "--retriever", "dense"])
    assert refused.exit_code == 2 and "expected bm25 or embed" in refused.output

    args = [*base, "--retriever", "embed", "--embed-model", f"openai:vectors@{server.base_url}"]
    args += ["--library", str(lib), "--context-items", "1", "--index-cache", str(tmp_path / "ix")]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        context = store.category_context("algebra")
    assert context["retriever"] == "embed" and context["items"] == ["plus_swap"]
    assert "(* in Swap *)\n(** Addition of natural numbers is commutative. *)" in context["text"]
    translation = next(b for b in chat_bodies(server) if "You turn competition" in system(b))
    assert "Lemma plus_swap : forall n m : nat, n + m = m + n" in system(translation)
    embedded = [s.body for s in server.requests if s.path == "/v1/embeddings"]
    assert {b["model"] for b in embedded} == {"vectors"} and len(
        embedded
    ) == 3  # check, docs, query
    log = json.loads((tmp_path / "run" / "formalize.json").read_text(encoding="utf-8"))
    assert log["config"]["retriever"] == "embed" and log["embedding_tokens"] > 0
