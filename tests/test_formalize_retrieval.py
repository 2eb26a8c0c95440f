"""Library context for formalize: the Coq standard library found by default, the module each
entry comes from, and the embedding retriever over real HTTP (stand-in server, real SDK)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from formalbench.core.errors import InputError
from formalbench.core.formalization import Problem
from formalbench.core.records import Language
from formalbench.llm import ModelCallError, RetryPolicy
from formalbench.llm.embeddings import OpenAIEmbedder, make_embedder
from formalbench.pipelines.formalize import retrieval
from formalbench.pipelines.formalize.config import FormalizeConfig
from formalbench.pipelines.formalize.context import prepare_contexts
from formalbench.pipelines.formalize.embed_index import EmbeddingIndex
from formalbench.pipelines.formalize.retrieval import LibraryIndex
from formalbench.store.formalize import FormalizeStore
from tests.standins.openai_server import EMBEDDINGS, Reply, StandinServer

LIBRARY = """(** The sum of two even numbers is even. *)
Lemma even_add_even : forall a b, Nat.Even a -> Nat.Even b -> Nat.Even (a + b).
Proof. Admitted.

Lemma triangle_ineq : forall x y : nat, x <= x + y.
Proof. Admitted.

(** Greatest common divisor, the Euclid way. *)
Definition my_gcd (a b : nat) : nat := a.
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---- the default Coq library and module names ---------------------------------------------


@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
def test_default_coq_library_gives_z_divide_with_its_module(tmp_path: Path, monkeypatch) -> None:
    """No --library: the roots come from `coqc -where`; narrowed to ZArith to stay fast."""
    where = Path(subprocess.run(["coqc", "-where"], capture_output=True, text=True).stdout.strip())
    real = retrieval.default_roots
    asked: list[list[Path]] = []

    def zarith_of_the_default(language: Language, project: str | None) -> list[Path]:
        roots = real(language, project)
        asked.append(roots)
        return [next(r for r in roots if r.name == "theories") / "ZArith"]

    monkeypatch.setattr(retrieval, "default_roots", zarith_of_the_default)
    cache = tmp_path / "cache"
    config = FormalizeConfig(
        problems="x", models=["openai:m"], backend="coq", context_items=10, index_cache=str(cache)
    )
    assert config.library == []
    problems = [
        Problem(id="d", informal="Show that 7 divides 21 in the integers.", category="nt"),
        Problem(id="g", informal="Prove that gcd(a, b) divides a.", category="nt"),
    ]
    with FormalizeStore(tmp_path / "f.sqlite") as store:
        store.add_problems(problems)
        assert asyncio.run(prepare_contexts(store, config, Language.coq, problems)) == []
        context = store.category_context("nt")
    assert where / "theories" in asked[0]
    assert context["source"] == "retrieval" and "Z.divide" in context["items"]
    assert "(* in Coq.ZArith.BinInt *)\nDefinition Z.divide" in context["text"]
    assert [p.name for p in cache.iterdir()] and all(
        p.name.startswith("coq-") for p in cache.iterdir()
    )


def test_lean_entries_name_their_package_module(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    _write(project / "lakefile.toml", 'name = "proj"\n')
    _write(project / "Proj" / "Basic.lean", "theorem Proj.easy : 1 = 1 := rfl\n")
    mathlib = project / ".lake" / "packages" / "mathlib"
    _write(mathlib / "lakefile.lean", "-- the package\n")
    _write(
        mathlib / "Mathlib" / "Data" / "Nat" / "Prime" / "Basic.lean",
        "namespace Nat\n/-- A prime is at least two. -/\n"
        "theorem Prime.two_le {p : ℕ} (hp : p.Prime) : 2 ≤ p := by\n  sorry\nend Nat\n",
    )
    index, _ = LibraryIndex.open([project], Language.lean, tmp_path / "cache")
    modules = {e.name: e.module for e in index.entries}
    assert modules == {
        "Nat.Prime.two_le": "Mathlib.Data.Nat.Prime.Basic",
        "Proj.easy": "Proj.Basic",
    }
    (prime,) = index.search(["every prime number is at least two"], 1)
    assert prime.render(Language.lean) == (
        "-- in Mathlib.Data.Nat.Prime.Basic\n/-- A prime is at least two. -/\n"
        "theorem Nat.Prime.two_le {p : ℕ} (hp : p.Prime) : 2 ≤ p"
    )


def test_coq_entries_follow_the_coqproject_mapping(tmp_path: Path) -> None:
    project = tmp_path / "cproj"
    _write(project / "_CoqProject", "# the build\n-R theories MyLib\n-arg -w -arg -notation\n")
    _write(project / "theories" / "Arith" / "Facts.v", LIBRARY)
    _write(tmp_path / "loose" / "Extra" / "More.v", "Lemma extra : True.\nProof. Admitted.\n")
    roots = [project / "theories" / "Arith", tmp_path / "loose"]
    index, _ = LibraryIndex.open(roots, Language.coq, tmp_path / "cache")
    modules = {e.name: e.module for e in index.entries}
    assert modules["my_gcd"] == "MyLib.Arith.Facts"
    assert modules["extra"] == "Extra.More"  # no project file: relative to its root
    top = index.search(["greatest common divisor"], 1)[0]
    assert top.render(Language.coq).startswith("(* in MyLib.Arith.Facts *)\n(** Greatest")


# ---- embeddings ---------------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer(models=("embedder", "other")) as srv:
        yield srv


def embedder(server: StandinServer, name: str = "embedder", **options) -> OpenAIEmbedder:
    retry = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)
    return make_embedder(f"openai:{name}@{server.base_url}", retry=retry, **options)


def library(tmp_path: Path) -> Path:
    return _write(tmp_path / "lib" / "Facts.v", LIBRARY).parent


def test_embedding_index_ranks_by_cosine_and_caches_per_model(server, tmp_path: Path) -> None:
    lib, cache = library(tmp_path), tmp_path / "cache"

    async def build(name: str, batch: int = 64):
        model = embedder(server, name, batch=batch)
        try:
            index, cached = await EmbeddingIndex.open([lib], Language.coq, model, cache)
            return index, cached, await index.search(["greatest common divisor"], 1)
        finally:
            await model.aclose()

    index, cached, (top,) = asyncio.run(build("embedder", batch=2))
    assert not cached and top.name == "my_gcd" and index.vectors.shape == (3, 128)
    assert server.count(EMBEDDINGS) == 3  # 3 entries in batches of 2, then the query
    sent = [s.body for s in server.requests if s.path == EMBEDDINGS]
    assert sent[0]["model"] == "embedder" and sent[0]["encoding_format"] == "float"
    assert any("Greatest common divisor" in t for b in sent for t in b["input"])

    again, cached, (top,) = asyncio.run(build("embedder"))
    assert cached and top.name == "my_gcd" and server.count(EMBEDDINGS) == 4  # the query only
    _, cached, _ = asyncio.run(build("other"))
    assert not cached and server.count(EMBEDDINGS) == 6  # another model's vectors
    assert len(list(cache.iterdir())) == 2


def test_embedding_requests_are_retried_and_bad_replies_are_errors(server, tmp_path) -> None:
    server.script(Reply(status=429, headers={"retry-after-ms": "1"}))
    model = embedder(server)
    assert len(asyncio.run(model.embed(["a b", "c"]))) == 2
    assert server.count(EMBEDDINGS) == 2 and model.tokens == 3
    server.embedder = lambda text: [1.0] * (len(text) % 3 + 1)
    with pytest.raises(ModelCallError, match="differ in length"):
        asyncio.run(embedder(server, batch=1).embed(["a", "bb"]))
    with pytest.raises(InputError, match="OpenAI-compatible"):
        make_embedder("anthropic:voyage")


def test_embedding_preflight_names_the_endpoint_and_hides_the_key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    with StandinServer(api_key="sk-right") as srv:
        model = make_embedder(f"openai:embedder@{srv.base_url}")
        with pytest.raises(ModelCallError) as err:
            asyncio.run(model.preflight())
    text = str(err.value)
    assert "embedding preflight failed" in text and srv.base_url in text and "401" in text
    assert "sk-wrong-key-0123456789" not in text


def test_embed_retriever_needs_an_embedding_model() -> None:
    with pytest.raises(ValueError, match="needs embed_model"):
        FormalizeConfig(problems="x", models=["openai:m"], retriever="embed")
    with pytest.raises(ValueError, match="only used with"):
        FormalizeConfig(problems="x", models=["openai:m"], embed_model="openai:e")
    with_embed = FormalizeConfig(
        problems="x", models=["openai:m"], retriever="embed", embed_model="openai:e"
    )
    plain = FormalizeConfig(problems="x", models=["openai:m"])
    assert with_embed.identity()["embed_model"] == "openai:e"
    assert with_embed.identity() != plain.identity()  # a resume cannot switch retrievers
