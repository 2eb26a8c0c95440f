"""ReviewStore: versioned decisions, refused stale writes, kept history, listing queries."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.store.db import StoreError
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ProblemFilter, ReviewConflict, ReviewStore
from test_dashboard_views import make_run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", extra=5) / "formalize.sqlite"


def _decision(pid: str, status: ReviewStatus, reviewer: str = "ana", **kw) -> ReviewDecision:
    return ReviewDecision(problem_id=pid, status=status, reviewer=reviewer, **kw)


def test_decisions_are_versioned_and_history_is_kept(db: Path):
    with ReviewStore(db) as store:
        assert store.current("alg-find") is None
        first = store.decide(
            _decision("alg-find", ReviewStatus.rejected, note="too easy"), based_on=0
        )
        assert first.version == 1 and first.at  # time filled in
        second = store.decide(
            _decision("alg-find", ReviewStatus.accepted, "ben", code="Theorem x."), based_on=1
        )
        assert second.version == 2
        assert store.current("alg-find") == second
        history = store.history("alg-find")
        assert [(d.version, d.status, d.reviewer, d.note) for d in history] == [
            (1, ReviewStatus.rejected, "ana", "too easy"),
            (2, ReviewStatus.accepted, "ben", ""),
        ]
    with ReviewStore(db) as again:  # durable, and the formalize component still opens
        assert again.current("alg-find") == second
        assert FormalizeStore(db).problem("alg-find") is not None


def test_stale_version_is_refused_and_changes_nothing(db: Path):
    with ReviewStore(db) as store:
        kept = store.decide(_decision("nt-divides", ReviewStatus.accepted, code="A."), based_on=0)
        with pytest.raises(ReviewConflict) as refused:
            store.decide(
                _decision("nt-divides", ReviewStatus.rejected, "ben", code="B."), based_on=0
            )
        assert refused.value.current == kept
        assert refused.value.based_on == 0
        assert "current version is 1" in str(refused.value) and "by ana" in str(refused.value)
        with pytest.raises(ReviewConflict):  # a version from the future is no better
            store.decide(_decision("nt-divides", ReviewStatus.rejected), based_on=7)
        assert store.current("nt-divides") == kept
        assert len(store.history("nt-divides")) == 1


def test_two_writers_from_the_same_version_one_wins(db: Path):
    stores = [ReviewStore(db), ReviewStore(db)]  # two connections, as two server workers
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def write(i: int) -> None:
        barrier.wait()
        try:
            stores[i].decide(
                _decision("alg-add-zero", ReviewStatus.accepted, f"r{i}", code=f"{i}."),
                based_on=0,
            )
            outcomes.append("saved")
        except ReviewConflict:
            outcomes.append("refused")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused", "saved"]
    assert len(stores[0].history("alg-add-zero")) == 1
    for s in stores:
        s.close()


def test_bad_decisions_are_refused(db: Path):
    with ReviewStore(db) as store:
        with pytest.raises(StoreError, match="reviewer name"):
            store.decide(_decision("alg-find", ReviewStatus.accepted, "  "), based_on=0)
        with pytest.raises(StoreError, match="accepted or rejected"):
            store.decide(_decision("alg-find", ReviewStatus.unreviewed), based_on=0)
        assert store.history("alg-find") == []


def test_recheck_is_stored_with_its_decision(db: Path):
    with ReviewStore(db) as store:
        stored = store.decide(
            _decision("alg-find", ReviewStatus.accepted, code="x."),
            based_on=0,
            checked={"compiled": True, "backend": "coq 8.16.1"},
        )
        assert store.checked("alg-find", stored.version) == {
            "compiled": True,
            "backend": "coq 8.16.1",
        }
        again = store.decide(_decision("alg-find", ReviewStatus.rejected), based_on=1)
        assert store.checked("alg-find", again.version) is None


def test_listing_counts_filters_and_neighbours(db: Path):
    with ReviewStore(db) as store:
        rows, total = store.page(ProblemFilter(), 0, 3)
        assert total == 8 and [r.id for r in rows] == ["nt-divides", "alg-add-zero", "alg-find"]
        first = rows[1]
        assert (first.candidates, first.compiled, first.aligned) == (3, 2, 1)
        assert first.status == ReviewStatus.unreviewed and first.category == "algebra"
        rows, _ = store.page(ProblemFilter(), 6, 3)
        assert [r.id for r in rows] == ["extra-0003", "extra-0004"]

        store.decide(_decision("alg-find", ReviewStatus.accepted, code="x."), based_on=0)
        store.decide(_decision("extra-0001", ReviewStatus.rejected), based_on=0)
        accepted = ProblemFilter(status=ReviewStatus.accepted)
        rows, total = store.page(accepted, 0, 50)
        assert total == 1 and rows[0].id == "alg-find" and rows[0].reviewer == "ana"
        assert store.counts(ProblemFilter()) == {
            ReviewStatus.unreviewed: 6,
            ReviewStatus.accepted: 1,
            ReviewStatus.rejected: 1,
        }
        algebra = ProblemFilter(category="algebra")
        assert store.counts(algebra)[ReviewStatus.unreviewed] == 1
        assert [r.id for r in store.page(algebra, 0, 50)[0]] == ["alg-add-zero", "alg-find"]
        assert store.categories() == ["algebra", "misc", "number theory"]

        text = ProblemFilter(text="ADDING ZERO")  # case-insensitive, statement text
        assert [r.id for r in store.page(text, 0, 50)[0]] == ["alg-add-zero"]
        assert [r.id for r in store.page(ProblemFilter(text="0002"), 0, 50)[0]] == ["extra-0002"]
        assert store.page(ProblemFilter(text="%"), 0, 50)[1] == 0  # wildcards are literal
        assert store.page(ProblemFilter(text="_"), 0, 50)[1] == 0

        assert store.neighbours("alg-add-zero", ProblemFilter()) == ("nt-divides", "alg-find")
        assert store.neighbours("nt-divides", ProblemFilter()) == (None, "alg-add-zero")
        unreviewed = ProblemFilter(status=ReviewStatus.unreviewed)
        assert store.neighbours("alg-add-zero", unreviewed) == ("nt-divides", "extra-0000")
        assert [d.problem_id for d in store.accepted()] == ["alg-find"]
