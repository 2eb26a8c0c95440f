"""The review dashboard on a construct run: pages, block edits re-checked with coqc, decisions,
export, and the guards it shares with the formalize dashboard.

The run is made once per module the way `formalbench construct` makes it: the source stages'
records written through `ConstructStore`, then the real formal stages (phase 3) with the
scripted model of tests/construct_formal_script.py and the real coqc; each test works on a
copy of it.
"""

from __future__ import annotations

import asyncio
import html
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from formalbench.backends.coq import CoqBackend
from formalbench.cli.main import app as cli
from formalbench.core.construct import (
    ConstructProblem,
    ExpansionNode,
    ExtractedExercise,
    Reference,
    ReviewLabel,
    SourceReview,
)
from formalbench.core.formalization import ReviewStatus
from formalbench.core.records import Task
from formalbench.dashboard.app import create_app
from formalbench.pipelines.construct.formal import run_formal_stages
from formalbench.store.construct import ConstructStore, StepRecord
from formalbench.store.review import ReviewStore
from tests import construct_formal_script as script
from tests.test_construct_formal import CONFIG

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
STORE = "construct.sqlite"
CLEAN = "the trace of A + B equals trace A + trace B <cleaned> & kept"


def _exercise(p: ConstructProblem, i: int) -> ExtractedExercise:
    node = ExpansionNode(
        label=p.source_idx,
        kind="exercise",
        text=p.problem,
        depth=0,
        children=[
            ExpansionNode(label="TR", kind="definition", text="Definition TR: the trace sums "
                          "the diagonal.", depth=1, via="\\acronymref{definition}{TR}",
                          parent=p.source_idx)
        ] if i == 1 else [],
        unresolved=["NOPE"] if i == 1 else [],
    )  # fmt: skip
    return ExtractedExercise(
        id=p.id,
        source=p.source,
        source_idx=p.source_idx,
        text=p.problem,
        refs=[Reference(raw="\\acronymref{definition}{TR}", key="TR", resolved=True)]
        if i == 1
        else [],
        expansion=node,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("construct-review") / "run"
    root.mkdir()
    problems = [
        p.model_copy(
            update={
                "problem_clean": CLEAN if p.id == "la/trace" else p.problem,
                "problem_with_context": f"With context: {p.problem}",
                "problem_standardized_math": f"Standardized: {p.problem}",
                "reviews": [SourceReview(label=ReviewLabel.accept, reason="faithful to source")],
            }
        )
        for p in script.PROBLEMS
    ]
    with ConstructStore(root / STORE) as store:
        exercises = [_exercise(p, i) for i, p in enumerate(problems, start=1)]
        store.put_exercises(exercises, {"exercises": len(exercises)})
        for p in problems:
            store.put_problem(p)
            store.put_step(p.id, StepRecord(step="clean", output={"text": "x"}, model="m"))
    (root / "construct.json").write_text(
        json.dumps({"kind": "construct", "config": {"backend": "coq", "timeout": 60}})
    )
    with CoqBackend(workers=1) as backend:
        asyncio.run(
            run_formal_stages(
                problems, backend=backend, model=script.model(), run_dir=root, config=CONFIG
            )
        )
    return root


@pytest.fixture
def run(template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "run"))


@pytest.fixture
def client(run: Path):
    with TestClient(create_app(run, reviewer="ana")) as c:
        yield c


class _Fields(HTMLParser):
    """The (name, value) pairs the decide form sends, in order (blocks repeat their names)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.pairs, self._area = False, [], None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "form" and a.get("action") == "/decide" and not self.pairs:
            self.inside = True
        elif self.inside and tag == "input" and a.get("name"):
            self.pairs.append([a["name"], a.get("value") or ""])
        elif self.inside and tag == "textarea":
            self.pairs.append([a["name"], ""])
            self._area = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "textarea" and self._area:
            self.pairs[-1][1] = self.pairs[-1][1].removeprefix("\n")
            self._area = None

    def handle_data(self, data: str) -> None:
        if self._area:
            self.pairs[-1][1] += data


def fields(page: str) -> list[list[str]]:
    parser = _Fields()
    parser.feed(page)
    return parser.pairs


def post(
    client: TestClient,
    url: str,
    pairs: list[list[str]],
    headers: dict[str, str] | None = None,
    **extra: str,
):
    """POST the form as a browser does (repeated names kept, in order)."""
    sent = [(k, v) for k, v in pairs if k not in extra] + list(extra.items())
    body = "&".join(f"{_q(k)}={_q(v)}" for k, v in sent)
    headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    return client.post(url, content=body, headers=headers, follow_redirects=False)


def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def set_block(pairs: list[list[str]], index: int, code: str) -> list[list[str]]:
    out = [list(p) for p in pairs]
    at = next(i for i, (k, v) in enumerate(out) if k == "block_index" and v == str(index))
    nxt = next(i for i in range(at + 1, len(out)) if out[i][0] == "block")
    out[nxt][1] = code
    return out


def test_the_list_shows_every_exercise_with_its_pipeline_status(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    for pid in ("la/trace", "la/square", "la/broken", "la/garbled"):
        assert f'href="/p/{_q(pid)}"' in page.text
    assert 'id="count-unreviewed">4<' in page.text
    assert "validated" in page.text and "split_failed" in page.text
    only = client.get("/", params={"q": "square"}).text
    assert "la/square" in only and "la/trace" not in only


def test_the_exercise_page_shows_source_stages_reviews_and_blocks(client: TestClient) -> None:
    text = client.get(f"/p/{_q('la/trace')}").text
    assert html.escape(script.TRACE) in text  # the source
    assert "Definition TR: the trace sums the diagonal." in text  # its expansion
    assert "unresolved: NOPE" in text
    assert html.escape(CLEAN) in text and "&lt;cleaned&gt; &amp; kept" in text  # escaped
    for stage in ("problem_clean", "problem_with_context", "problem_standardized_math",
                  "problem_finally"):  # fmt: skip
        assert f'id="stage-{stage}"' in text
    assert "faithful to source" in text  # the source review
    assert "[BLOCK Exercise MO.C1 | 2 | defn]" in text
    # the compile rounds: the first translation failed on `sum_list`, the repair compiled
    assert "Compile rounds (2)" in text and "sum_list" in text
    assert "Block reviews" in text and "not_usable_yet" in text  # the thm's first review
    pairs = fields(text)
    blocks = [v for k, v in pairs if k == "block"]
    assert blocks == [script.TRACE_DEF, script.TRACE_THM]  # the packaged bodies, editable
    assert client.get("/p/no%2Fsuch").status_code == 404


def test_an_edited_block_is_rechecked_with_coqc(client: TestClient) -> None:
    pairs = fields(client.get(f"/p/{_q('la/trace')}").text)
    broken = set_block(pairs, 2, script.TRACE_DEF.replace("list_sum", "sum_list"))
    page = post(client, "/check", broken, action="check")
    assert page.status_code == 200
    assert "Does not compile" in page.text and "sum_list" in page.text
    assert script.TRACE_DEF.replace("list_sum", "sum_list") in [
        v for k, v in fields(page.text) if k == "block"
    ]  # the reviewer's text is shown back
    fixed = set_block(pairs, 3, script.TRACE_THM.replace("trace n B", "trace n B + 0"))
    good = post(client, "/check", fixed, action="check")
    assert "<b>Compiles</b>" in good.text and "1 hole" in good.text
    assert 'id="edited"' in good.text  # the diff against the packaged file


def test_accept_with_an_edit_and_reject_are_stored(client: TestClient, run: Path) -> None:
    pairs = fields(client.get(f"/p/{_q('la/trace')}").text)
    edited = set_block(pairs, 3, script.TRACE_THM.replace("trace n B", "trace n B + 0"))
    edited = [[k, v.replace("\n", "\r\n") if k == "block" else v] for k, v in edited]
    assert post(client, "/check", edited, action="check").status_code == 200
    done = post(client, "/decide", edited, action="accept", note="explicit + 0")
    assert done.status_code == 303 and "saved=1" in done.headers["location"]
    rejected = fields(client.get(f"/p/{_q('la/broken')}").text)
    assert post(client, "/decide", rejected, action="reject", note="rank").status_code == 303
    with ReviewStore(run / STORE) as store:
        accepted = store.current("la/trace")
        assert accepted is not None and accepted.status == ReviewStatus.accepted
        assert accepted.edited and accepted.note == "explicit + 0" and accepted.reviewer == "ana"
        assert "trace n B + 0" in (accepted.code or "") and "\r" not in (accepted.code or "")
        assert "(* [BLOCK Exercise MO.C1 | 3 | thm] *)" in (accepted.code or "")
        assert store.checked("la/trace", 1)["compiled"] is True  # the re-check before accept
        assert store.current("la/broken").status == ReviewStatus.rejected
    page = client.get(done.headers["location"]).text
    assert "Saved: accepted by ana" in page
    again = [v for k, v in fields(page) if k == "block"]
    assert "trace n B + 0" in again[1]  # the decided text is what the editor shows now
    assert 'id="count-accepted">1<' in client.get("/").text


def test_export_writes_the_accepted_exercises(client: TestClient, run: Path) -> None:
    for pid, action in (("la/trace", "accept"), ("la/square", "accept"), ("la/broken", "reject")):
        pairs = fields(client.get(f"/p/{_q(pid)}").text)
        assert post(client, "/decide", pairs, action=action).status_code == 303
    body = client.get("/export.jsonl")
    assert body.status_code == 200
    tasks = [Task.model_validate_json(line) for line in body.text.splitlines()]
    assert [t.id for t in tasks] == ["la/trace", "la/square"]
    trace = tasks[0]
    assert script.TRACE_THM in trace.formal and trace.header.startswith("From Coq Require")
    assert trace.metadata["holes"] == 1 and trace.metadata["targets"] == ["trace_add"]
    assert trace.trail["construct"]["problem_clean"] == CLEAN
    assert trace.trail["review"]["status"] == "accepted" and trace.trail["review"]["diff"] == ""
    out = run.parent / "accepted.jsonl"
    result = CliRunner().invoke(cli, ["review", str(run), "--export", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 2 accepted tasks" in result.output
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["la/trace", "la/square"]


def test_writes_need_the_form_token_and_the_same_origin(client: TestClient, run: Path) -> None:
    pairs = fields(client.get(f"/p/{_q('la/square')}").text)
    no_token = [p for p in pairs if p[0] != "csrf"]
    assert post(client, "/decide", no_token, action="accept").status_code == 403
    cross = post(client, "/decide", pairs, {"Sec-Fetch-Site": "cross-site"}, action="accept")
    assert cross.status_code == 403 and "another site" in cross.text
    other = post(client, "/decide", pairs, {"Origin": "http://evil.example"}, action="accept")
    assert other.status_code == 403
    assert post(client, "/check", no_token, action="check").status_code == 403
    with ReviewStore(run / STORE) as store:
        assert store.current("la/square") is None
    with TestClient(create_app(run, token="s3cret-token-x")) as guarded:
        assert guarded.get("/").status_code == 401
        assert (
            guarded.get("/", headers={"X-Formalbench-Token": "s3cret-token-x"}).status_code == 200
        )


def test_a_whole_file_can_be_written_for_an_exercise_without_blocks(
    client: TestClient, run: Path
) -> None:
    pairs = fields(client.get(f"/p/{_q('la/garbled')}").text)
    assert [k for k, _ in pairs if k == "block"] == []
    code = "Theorem v : forall n : nat, n = n.\nProof.\nAdmitted.\n"
    checked = post(client, "/check", pairs, code=code, action="check")
    assert "<b>Compiles</b>" in checked.text
    empty = post(client, "/decide", pairs, action="accept")
    assert empty.status_code == 400 and "nothing to accept" in empty.text
    assert post(client, "/decide", pairs, code=code, action="accept").status_code == 303
    with ReviewStore(run / STORE) as store:
        assert store.current("la/garbled").code == code


def test_a_stale_decision_is_refused_and_can_be_resubmitted(client: TestClient, run: Path) -> None:
    tab1 = fields(client.get(f"/p/{_q('la/square')}").text)
    tab2 = set_block(tab1, 1, script.SQUARE_THM.replace("0 < n * n", "1 <= n * n"))
    assert post(client, "/decide", tab1, action="accept").status_code == 303
    refused = post(client, "/decide", tab2, action="reject", note="goal", reviewer="ben")
    assert refused.status_code == 409 and "Not saved" in refused.text
    assert html.escape("1 <= n * n") in refused.text  # the refused text is shown back
    with ReviewStore(run / STORE) as store:
        assert [d.reviewer for d in store.history("la/square")] == ["ana"]
    retry = fields(refused.text)  # the conflict page's form: the whole file, current version
    assert ["base_version", "1"] in retry
    assert post(client, "/decide", retry, action="reject").status_code == 303
    with ReviewStore(run / STORE) as store:
        latest = store.current("la/square")
    assert latest is not None and latest.version == 2 and "1 <= n * n" in (latest.code or "")


def test_an_extraction_only_run_opens_and_a_bad_folder_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "extract-only"
    root.mkdir()
    problem = script.PROBLEMS[1]
    with ConstructStore(root / STORE) as store:
        store.put_exercises([_exercise(problem, 2)], {"exercises": 1})
    with TestClient(create_app(root)) as c:
        assert "la/square" in c.get("/").text and "not reached" in c.get("/").text
        page = c.get(f"/p/{_q('la/square')}").text
        assert html.escape(script.SQUARE) in page and 'id="stage-problem_clean"' in page
        assert "not produced" in page and 'name="code"' in page  # a whole-file editor
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / STORE).write_text("not a database")
    result = CliRunner().invoke(cli, ["review", str(tmp_path / "bad"), "--export", "x.jsonl"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "cannot open as a SQLite database" in result.output


def test_an_exercise_accepted_with_a_proof_is_exported_as_a_task_that_eval_runs(
    client: TestClient, run: Path
) -> None:
    """The reviewer finished the proof in the page; the export makes it a hole again (the
    whole file is the reference solution), so `formalbench eval` runs on the file."""
    from formalbench.pipelines.evaluate import run_evaluation
    from formalbench.pipelines.run_config import EvalConfig
    from formalbench.pipelines.run_files import load_summary

    pairs = fields(client.get(f"/p/{_q('la/square')}").text)
    block = next(v for k, v in pairs if k == "block")
    assert block.endswith("Proof.\nAdmitted.")
    proved = set_block(pairs, 1, block.replace("Proof.\nAdmitted.", "Proof.\n  nia.\nQed."))
    assert post(client, "/decide", proved, action="accept").status_code == 303
    out = run.parent / "accepted.jsonl"
    result = CliRunner().invoke(cli, ["review", str(run), "--export", str(out)])
    assert result.exit_code == 0, result.output
    (task,) = [Task.model_validate_json(line) for line in out.read_text().splitlines()]
    assert task.formal.rstrip().endswith("Proof.\nAdmitted.") and "nia" not in task.formal
    assert "nia." in task.metadata["reference_solution"]
    assert task.metadata["holes"] == 1 and task.metadata["targets"] == ["sq_pos"]
    config = EvalConfig(dataset=str(out), tactics=["nia"], workers=1, timeout=60)
    outcome = run_evaluation(config, run.parent / "eval")
    assert outcome.tasks == 1 and outcome.new_attempts == 1
    assert load_summary(run.parent / "eval").solved == ["la/square"]
