"""Snapshot store figures (prints them, asserts nothing).

    python bench/bench_snapshot.py restore [--files 100000] [--distinct 5000] [--dir D]
        put and restore a generated tree of small files with much duplication: hard links
        (target < 0.5 s for 100,000 files), reflink and copy.
    python bench/bench_snapshot.py dedup BUNDLE [--commits 20] [--work D] [--jobs 2]
        clone a Coq project's git bundle, build its last N first-parent commits with
        `make` (incrementally: each commit is checked out over the previous build tree),
        put each build tree (sources + .vo/.glob, without .git) and each source tree into
        two stores, and print their dedup ratios.

Temporary folders live under --dir/--work (default: the system temp folder; the store and
the restores must share a filesystem for hard links).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from formalbench.store.snapshots import SnapshotStore


def generate_tree(root: Path, files: int, distinct: int, seed: int = 0) -> int:
    """`files` small files (100 B - 4 KiB) in folders of 100, drawn from `distinct`
    contents; returns the total size."""
    rng = random.Random(seed)
    words = [f"lemma_{i}" for i in range(2000)]
    pool = [
        (" ".join(rng.choices(words, k=rng.randint(10, 400))) + "\n").encode()
        for _ in range(distinct)
    ]
    total = 0
    for i in range(files):
        folder = root / f"d{i // 1000:03d}" / f"s{(i // 100) % 10}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        data = pool[rng.randrange(distinct)]
        (folder / f"f{i}.vo").write_bytes(data)
        total += len(data)
    return total


def timed_restore(store: SnapshotStore, dest: Path, mode: str) -> float:
    cpu = time.process_time()
    info = store.restore("tree", dest, mode=mode)  # type: ignore[arg-type]
    cpu = time.process_time() - cpu
    print(
        f"  restore {mode:8s} {info.seconds:7.3f} s wall, {cpu:7.3f} s CPU  "
        f"(linked {info.linked}, reflinked {info.reflinked}, copied {info.copied})",
        flush=True,
    )
    return info.seconds


def bench_restore(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-snapshot-") as tmp:
        base = Path(tmp)
        start = time.perf_counter()
        total = generate_tree(base / "tree", args.files, args.distinct)
        print(
            f"tree: {args.files} files, {args.distinct} distinct contents, {total / 1e6:.1f} MB "
            f"(generated in {time.perf_counter() - start:.1f} s); {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        store = SnapshotStore(base / "store")
        info = store.put(base / "tree", "tree")
        print(f"  put              {info.seconds:7.3f} s wall ({info.new_objects} objects)")
        stats = store.stats()
        print(
            f"  stored {stats.stored_bytes / 1e6:.2f} MB for {stats.logical_bytes / 1e6:.1f} MB"
            f" logical, dedup_ratio {stats.dedup_ratio:.3f}"
        )
        shutil.rmtree(base / "tree")
        cold = timed_restore(store, base / "r-cold", "hardlink")
        print("    (cold: the link cache was materialised from the compressed objects)")
        warm = [timed_restore(store, base / f"r-warm{i}", "hardlink") for i in range(3)]
        timed_restore(store, base / "r-reflink", "reflink")
        copy = timed_restore(store, base / "r-copy", "copy")
        verify = store.restore("tree", base / "r-verify", mode="hardlink", verify=True)
        print(f"  restore hardlink --verify {verify.seconds:.3f} s")
        print(
            json.dumps(
                {
                    "files": args.files,
                    "hardlink_cold_s": round(cold, 3),
                    "hardlink_warm_s": round(min(warm), 3),
                    "copy_s": round(copy, 3),
                    "target_hardlink_s": 0.5,
                }
            )
        )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


BUILD_SUFFIXES = (".vo", ".vos", ".vok", ".glob", ".aux")


def prune_stale(repo: Path) -> None:
    """Before an incremental build: drop coqdep's dependency file (it may name files the
    new commit removed) and build outputs whose `.v` is gone, so each build tree is what a
    clean build of its commit would give."""
    (repo / ".Makefile.coq.d").unlink(missing_ok=True)
    for path in repo.rglob("*"):
        if not path.name.endswith(BUILD_SUFFIXES) or ".git" in path.parts:
            continue
        stem = path.name.removeprefix(".").rsplit(".", 1)[0]
        if not (path.parent / f"{stem}.v").exists():
            path.unlink()


def bench_dedup(args: argparse.Namespace) -> None:
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    repo = work / "repo"
    if not repo.exists():
        subprocess.run(["git", "clone", "-q", args.bundle, str(repo)], check=True)
    listed = subprocess.run(
        ["git", "ls-remote", args.bundle, "HEAD"], check=True, capture_output=True, text=True
    ).stdout.split()
    tip = listed[0] if listed else "HEAD"  # the bundle's tip, whatever the clone has checked out
    commits = git(repo, "rev-list", "--first-parent", "--reverse", f"-{args.commits}", tip)
    builds = SnapshotStore(work / "store-builds")
    sources = SnapshotStore(work / "store-sources")
    print(f"work folder {work}; {os.cpu_count()} CPUs; make -j{args.jobs}", flush=True)
    for n, commit in enumerate(commits.split(), 1):
        git(repo, "checkout", "-q", "--force", commit)
        prune_stale(repo)
        start = time.perf_counter()
        done = subprocess.run(["make", f"-j{args.jobs}"], cwd=repo, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"make failed at {commit}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        build = builds.put(repo, commit[:12], exclude=[".git"])
        src_dir = work / "src"
        shutil.rmtree(src_dir, ignore_errors=True)
        src_dir.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", commit], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src_dir)], input=archive, check=True)
        sources.put(src_dir, commit[:12])
        print(
            f"{n:2d} {commit[:12]} make {seconds:6.1f} s, {build.files} files, "
            f"{build.logical_bytes / 1e6:.1f} MB, {build.new_objects} new objects",
            flush=True,
        )
    for name, store in (("builds (sources + .vo/.glob)", builds), ("sources only", sources)):
        stats = store.stats().as_dict()
        print(f"{name}: {json.dumps(stats)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    restore = sub.add_parser("restore")
    restore.add_argument("--files", type=int, default=100_000)
    restore.add_argument("--distinct", type=int, default=5_000)
    restore.add_argument("--dir", default=None)
    dedup = sub.add_parser("dedup")
    dedup.add_argument("bundle")
    dedup.add_argument("--commits", type=int, default=20)
    dedup.add_argument("--work", default=None)
    dedup.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    bench_restore(args) if args.bench == "restore" else bench_dedup(args)


if __name__ == "__main__":
    main()
