"""Precision and recall of each `ape mine` filter, per language, against hand labels.

    python bench/bench_ape_filters.py sample N > sample.jsonl   # candidates to label
    python bench/bench_ape_filters.py score [--config lean|coq] [NAME=VALUE ...]  # figures

A candidate is every changed library file (and chunk) of a single-parent commit that is not
deleted: the input of the content filters. Each filter is applied to it alone (not in the
funnel's order), so each filter's figures are its own. Labels (`ape_filter_labels.jsonl`,
beside this script) say whether a candidate is a meaningful proof-engineering task
("task") or not ("noise": whitespace, renames, comments, headers, mechanical churn), judged
by reading its diff. precision = labelled tasks among the kept / kept; recall = labelled
tasks kept / labelled tasks; "all filters" is the whole chain with the commit type.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formalbench.pipelines.ape.filters import chunks, filter_chain  # noqa: E402
from formalbench.pipelines.ape.gitsource import GitRepo  # noqa: E402
from formalbench.pipelines.ape.mining import _record, _type, _type_source  # noqa: E402
from formalbench.pipelines.ape.sources import source_filter  # noqa: E402
from formalbench.pipelines.ape.task import MineConfig  # noqa: E402
from tests.shared_data import DATA  # noqa: E402

HISTORIES = {
    "coq-topology": "coq",
    "coq-huffman": "coq",
    "coq-stalmarck": "coq",
    "coq-dblib": "coq",
    "batteries": "lean",
}
LABELS = Path(__file__).with_name("ape_filter_labels.jsonl")


def candidates(name: str, lang: str, cfg: MineConfig, work: Path, thresholds_of: str = ""):
    """(key, task, verdicts) for every content candidate of one history, judged with the
    thresholds of `thresholds_of` (default: the history's language)."""
    repo = GitRepo.open(DATA / "git-histories" / f"{name}.bundle", work / name)
    commits = repo.commits()
    type_source = _type_source(commits, cfg)
    chain = filter_chain(cfg.thresholds(thresholds_of or lang))
    for commit in commits:
        if len(commit.parents) != 1:
            continue
        parent = commit.parents[0]
        kind = _type(commit, type_source)
        inside, inside_before = (
            source_filter(repo, commit.sha, lang),
            source_filter(repo, parent, lang),
        )
        for change in repo.changes(parent, commit.sha):
            path = change.path_after or ""
            if change.status == "deleted" or not (
                inside(path) or (change.path_before and inside_before(change.path_before))
            ):
                continue
            before = repo.show(parent, change.path_before) if change.path_before else ""
            after = repo.show(commit.sha, path) or ""
            pairs = chunks(before or "", after, change.status, lang, cfg.max_diff_lines)
            for n, (b, a) in enumerate(pairs):
                task = _record(commit, parent, kind, type_source, "", lang, change, b, a, cfg)
                verdicts = {"commit_type": kind in cfg.kept_types(type_source)}
                verdicts.update({f: keep(task) for f, keep in chain if f != "not_deleted"})
                yield f"{name}:{commit.sha[:12]}:{path}:{n}", task, verdicts
    repo.close()


def sample(n: int) -> None:
    """`n` random candidates per history, with their diff, for a person to label."""
    rng = random.Random(20)
    cfg = MineConfig()
    with tempfile.TemporaryDirectory() as work:
        for name, lang in HISTORIES.items():
            rows = list(candidates(name, lang, cfg, Path(work)))
            for key, task, _ in rng.sample(rows, min(n, len(rows))):
                diff = task.gold_diff.splitlines()
                print(
                    json.dumps(
                        {
                            "key": key,
                            "message": task.message.splitlines()[0][:100],
                            "diff": "\n".join(diff[2:60]),
                        }
                    )
                )


def score(config: str, overrides: dict[str, float]) -> None:
    """The figures of each filter on the labelled candidates: the random sample alone
    (unbiased precision), then with the candidates sampled from subjects naming an addition
    (more tasks, for recall)."""
    labels = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            labels[row["key"]] = row
    cfg = MineConfig(**overrides)
    with tempfile.TemporaryDirectory() as work:
        for lang in ("coq", "lean"):
            rows = []
            for name, history_lang in HISTORIES.items():
                wanted = {k for k in labels if k.startswith(name + ":")}
                if history_lang != lang or not wanted:
                    continue
                thresholds_of = "" if config == "language" else config
                for key, _task, verdicts in candidates(name, lang, cfg, Path(work), thresholds_of):
                    if key in wanted:
                        row = labels[key]
                        rows.append((row["label"] == "task", "sample" not in row, verdicts))
            random_rows = [(t, v) for t, is_random, v in rows if is_random]
            _table(f"{lang}, random sample", random_rows)
            if len(random_rows) < len(rows):
                _table(f"{lang}, all labelled", [(t, v) for t, _, v in rows])


def _table(title: str, rows: list[tuple[bool, dict[str, bool]]]) -> None:
    if not rows:
        return
    tasks = sum(t for t, _ in rows)
    print(f"{title}: {len(rows)} labelled, {tasks} tasks, {len(rows) - tasks} noise")
    print(f"  {'filter':18} {'kept':>5} {'precision':>9} {'recall':>7} {'noise cut':>9}")
    for f in [*rows[0][1], "all filters"]:
        kept = [t for t, v in rows if (all(v.values()) if f == "all filters" else v[f])]
        precision = sum(kept) / len(kept) if kept else float("nan")
        recall = sum(kept) / tasks if tasks else float("nan")
        noise = len(rows) - tasks
        cut = 1 - (len(kept) - sum(kept)) / noise if noise else 0.0
        print(f"  {f:18} {len(kept):5} {precision:9.2f} {recall:7.2f} {cut:9.2f}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "sample":
        sample(int(sys.argv[2]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "score":
        args = sys.argv[2:]
        config = args[args.index("--config") + 1] if "--config" in args else "language"
        overrides = dict(a.split("=", 1) for a in args if "=" in a)  # e.g. min_distinct_ratio=0.5
        score(config, {k: float(v) for k, v in overrides.items()})
    else:
        sys.exit(__doc__)
