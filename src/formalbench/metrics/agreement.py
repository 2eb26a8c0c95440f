"""Agreement of a thresholded score with human labels: precision, recall, accuracy, Cohen's
kappa, the threshold sweep GTED's authors used, and a cross-validated version of it.

The authors pick the threshold on the labelled pairs themselves (sweep 0..1 in steps of
0.001, maximise kappa, break ties by accuracy, then precision, then recall), so their figures
are optimistic. `cross_validated` picks it on k-1 folds and scores the held-out fold, so no
pair is scored with a threshold chosen on it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Agreement:
    """Confusion counts of `score >= threshold` against the labels, and the usual figures."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else 0.0

    @property
    def kappa(self) -> float:
        """Cohen's kappa between the two binary raters (0 when chance agreement is 1)."""
        n = self.n
        if not n:
            return 0.0
        observed = (self.tp + self.tn) / n
        yes = ((self.tp + self.fp) / n) * ((self.tp + self.fn) / n)
        no = ((self.fn + self.tn) / n) * ((self.fp + self.tn) / n)
        chance = yes + no
        return 0.0 if chance >= 1 else (observed - chance) / (1 - chance)

    def figures(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "n": self.n,
            "precision": self.precision,
            "recall": self.recall,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
        }


def agreement(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> Agreement:
    """Counts of `score >= threshold` ("same") against the human labels."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    tp = fp = fn = tn = 0
    for score, label in zip(scores, labels, strict=True):
        said = score >= threshold - 1e-12
        if said and label:
            tp += 1
        elif said:
            fp += 1
        elif label:
            fn += 1
        else:
            tn += 1
    return Agreement(tp, fp, fn, tn)


def best_threshold(
    scores: Sequence[float], labels: Sequence[bool], step: float = 0.001
) -> tuple[float, Agreement]:
    """The authors' sweep: the threshold in [0, 1] maximising (kappa, accuracy, precision,
    recall), the lowest such threshold on ties."""
    best: tuple[tuple[float, ...], float, Agreement] | None = None
    steps = round(1 / step)
    for i in range(steps + 1):
        t = round(i * step, 10)
        a = agreement(scores, labels, t)
        key = (round(a.kappa, 12), a.accuracy, a.precision, a.recall)
        if best is None or key > best[0]:
            best = (key, t, a)
    assert best is not None
    return best[1], best[2]


def cross_validated(
    scores: Sequence[float], labels: Sequence[bool], folds: int = 5, seed: int = 0
) -> dict[str, Any]:
    """k-fold: each fold is scored with the threshold chosen on the other folds; the counts of
    all folds are pooled. Returns the pooled figures and the thresholds chosen."""
    n = len(scores)
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {folds}")
    if n < folds:
        raise ValueError(f"{folds}-fold cross-validation needs at least {folds} labelled pairs")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    tp = fp = fn = tn = 0
    thresholds: list[float] = []
    for k in range(folds):
        held = set(order[k::folds])
        train = [i for i in range(n) if i not in held]
        t, _ = best_threshold([scores[i] for i in train], [labels[i] for i in train])
        thresholds.append(t)
        a = agreement([scores[i] for i in held], [labels[i] for i in held], t)
        tp, fp, fn, tn = tp + a.tp, fp + a.fp, fn + a.fn, tn + a.tn
    pooled = Agreement(tp, fp, fn, tn)
    return {"folds": folds, "seed": seed, "thresholds": thresholds, **pooled.figures()}
