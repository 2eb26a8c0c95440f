"""Extraction time of a whole textbook (target < 5 s on fcla) and the per-exercise cost of
the dependency expansion (Algorithm 1).

Prints, over `--repeat` runs (best and median, wall and CPU seconds): `extract_textbook` on
the archive (unpacking included) and on the unpacked folder; the reading alone (LaTeX
reader); then, for depth 1..3, the expansion of every exercise: ms per exercise and inserted
nodes per exercise. `--full-parse` also times a complete pylatexenc parse of every `.tex`
file, the cost the reader avoids by reading only what it needs (docs/decisions.md).

    python bench/bench_construct_extract.py
    python bench/bench_construct_extract.py --source ../shared/data/fcla-latex.tar.gz --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from formalbench.core.construct import ExpansionNode
from formalbench.pipelines.construct.expansion import count_nodes, expand_item
from formalbench.pipelines.construct.extract import book_root, extract_textbook
from formalbench.pipelines.construct.latex_reader import LatexBookReader

T = TypeVar("T")
DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "fcla-latex.tar.gz"


def timed(fn: Callable[[], T], repeat: int) -> tuple[list[float], list[float], T]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return walls, cpus, result


def line(name: str, walls: list[float], cpus: list[float]) -> None:
    print(
        f"{name:<34} wall best {min(walls):6.2f} s  median {statistics.median(walls):6.2f} s"
        f"   cpu best {min(cpus):6.2f} s  median {statistics.median(cpus):6.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--full-parse", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.source.is_dir():
            folder = args.source
        else:
            with tarfile.open(args.source) as tf:
                tf.extractall(folder, filter="data")
        walls, cpus, ext = timed(lambda: extract_textbook(args.source), args.repeat)
        line("extract_textbook (source as given)", walls, cpus)
        walls, cpus, ext = timed(lambda: extract_textbook(folder), args.repeat)
        line("extract_textbook (unpacked folder)", walls, cpus)
        root = book_root(folder)
        walls, cpus, _ = timed(lambda: LatexBookReader(root).read(), args.repeat)
        line("reading alone (LaTeX reader)", walls, cpus)
        stats = ext.stats
        print(
            f"book: {stats['exercises']} exercises, {stats['items']} items, "
            f"{stats['references']} exercise references, {stats['resolved_references']} resolved"
        )
        items = ext.items
        index = {i.label: i for i in items}
        book = LatexBookReader(root).read()
        exercises = [i for i in items if i.kind == "exercise"]
        for depth in (1, 2, 3):

            def expand_all(d: int = depth) -> list[ExpansionNode]:
                return [expand_item(e, index, d, book.expandable) for e in exercises]

            walls, cpus, trees = timed(expand_all, args.repeat)
            nodes = sum(count_nodes(t) - 1 for t in trees)
            per = 1000 * min(cpus) / len(exercises)
            print(
                f"expansion depth {depth}: {per:6.3f} ms cpu per exercise "
                f"({nodes / len(exercises):5.1f} inserted nodes per exercise)"
            )
        if args.full_parse:
            from pylatexenc.latexwalker import LatexWalker

            texts = [p.read_text(encoding="utf-8") for p in folder.rglob("*.tex")]

            def parse_all() -> None:
                for t in texts:
                    LatexWalker(t, tolerant_parsing=True).get_latex_nodes()

            walls, cpus, _ = timed(parse_all, 1)
            line(f"full pylatexenc parse ({len(texts)} files)", walls, cpus)


if __name__ == "__main__":
    main()
