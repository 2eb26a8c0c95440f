"""Per-language filter thresholds: on a Coq history of genuine lemma-adding commits (proofs
whose tactic lines repeat, as Coq proofs do) most commits become tasks, and commits that
only reformat, rename, annotate or touch metadata become none."""

from __future__ import annotations

from formalbench.pipelines.ape.mining import mine
from formalbench.pipelines.ape.task import LANGUAGE_THRESHOLDS, MineConfig
from formalbench.store.ape import ApeStore
from tests.test_ape_layout import _commit, _git

BASE = """Inductive step : nat -> nat -> Prop :=
  | step_succ : forall n, step n (S n).

Inductive reach : nat -> nat -> Prop :=
  | reach_refl : forall n, reach n n
  | reach_step : forall a b c, step a b -> reach b c -> reach a c.
"""


def _lemma(name: str, k: int) -> str:
    """Two genuine lemmas whose proofs repeat tactic lines (`econstructor.`, `eassumption.`,
    bullets), about as often as the labelled Coq proofs do (distinct/total 0.6-0.8)."""
    hops = "".join("\n  econstructor.\n  + apply step_succ." for _ in range(k))
    return (
        f"\nLemma {name} : forall n, reach n {'S (' * k}n{')' * k}.\n"
        f"Proof.\n  intros n.{hops}\n  + constructor.\nQed.\n"
        f"\nLemma {name}_trans : forall a b c, reach a b -> reach b c -> reach a c.\n"
        "Proof.\n  intros a b c H H0.\n  induction H.\n"
        "  - eassumption.\n  - econstructor.\n    + eassumption.\n    + apply IHreach.\n"
        "      eassumption.\nQed.\n"
    )


def test_coq_lemma_commits_become_tasks_and_noise_commits_none(tmp_path) -> None:
    repo = tmp_path / "lib"
    repo.mkdir()
    _git(repo, "init", "-q")
    text = BASE
    _commit(repo, "Initial import", {"_CoqProject": "-R theories Lib\n", "theories/Reach.v": text})
    subjects = [
        "Add reach_three",
        "Prove reach_four and its transitivity",
        "Lemma reach_five: five steps",  # no verb: the inferred type is "other"
        "More lemmas about reach",
        "reach_seven",
        "Show reach_eight",
    ]
    lemma_commits = []
    for i, subject in enumerate(subjects):
        text += _lemma(f"reach_{i + 3}", 3 + i % 2)
        _commit(repo, subject, {"theories/Reach.v": text})
        lemma_commits.append(_git(repo, "rev-parse", "HEAD").strip())
    noise = {
        "Reformat Reach.v": {"theories/Reach.v": text.replace("\n  ", "\n    ")},
        "Rename Reach.v to Reachability.v": {
            "theories/Reach.v": None,
            "theories/Reachability.v": text.replace("\n  ", "\n    "),
            "_CoqProject": "-R theories Lib\n",
        },
        "Add Proof using annotations": {
            "theories/Reachability.v": text.replace("\n  ", "\n    ").replace(
                "Proof.\n", "Proof using.\n"
            )
        },
        "Update the opam file and README": {
            "coq-lib.opam": 'opam-version: "2.0"\ndepends: [ "coq" {>= "8.16"} ]\n',
            "README.md": "Reachability lemmas.\n",
        },
        "Add a copyright header": {
            "theories/Reachability.v": "(* Copyright 2024 the authors. *)\n(* MIT *)\n"
            + text.replace("\n  ", "\n    ").replace("Proof.\n", "Proof using.\n")
        },
    }
    for subject, files in noise.items():
        _commit(repo, subject, files)
    summary = mine(repo, tmp_path / "run", MineConfig())
    with ApeStore(tmp_path / "run" / "ape.sqlite") as store:
        kept = {t["commit_hash"] for t in store.kept_tasks()}
    noise_kept = kept - set(lemma_commits)
    assert noise_kept == set(), noise_kept
    assert len(kept & set(lemma_commits)) >= 5, summary.funnel  # most lemma commits
    assert summary.funnel["library_path"] > summary.funnel["edit_scatter"]
    # the Lean (reference) thresholds would have dropped them for their repeated lines
    lean = mine(repo, tmp_path / "run-lean", MineConfig(**LANGUAGE_THRESHOLDS["lean"].model_dump()))
    assert lean.kept < summary.kept
