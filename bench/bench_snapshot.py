"""Snapshot store figures (prints them, asserts nothing).

    python bench/bench_snapshot.py restore [--files 100000] [--distinct 5000] [--dir D ...]
            [--floor] [--runs 5] [--modes reflink,copy]
        put and restore a generated tree of small files with much duplication: hard links
        (target < 0.5 s for 100,000 files; cold, warm best and median of --runs, --verify),
        reflink and copy (--modes "" leaves them out). Runs once per --dir (default: /dev/shm,
        a tmpfs, then the system temp folder) and prints each one's filesystem type; --floor
        first times `cp -al` of the tree and plain-Python links (the kernel floor).
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
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from formalbench.store.snapshots import RestoreMode, SnapshotStore, manifest


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


def fs_type(folder: str) -> str:
    """The filesystem type of `folder` (tmpfs, ext4, ...): the longest mount point above it
    in /proc/self/mounts (`stat -f` says "ext2/ext3" for ext4)."""
    real, best, kind = os.path.realpath(folder), "", "unknown"
    try:
        with open("/proc/self/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[1].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def timed_restore(
    store: SnapshotStore, dest: Path, mode: RestoreMode, verify: bool = False
) -> float:
    cpu = time.process_time()
    info = store.restore("tree", dest, mode=mode, verify=verify)
    cpu = time.process_time() - cpu
    label = mode + (" --verify" if verify else "")
    print(
        f"  restore {label:17s} {info.seconds:7.3f} s wall, {cpu:7.3f} s CPU  "
        f"(linked {info.linked}, reflinked {info.reflinked}, copied {info.copied})",
        flush=True,
    )
    return info.seconds


def python_floor(tree: Path, out: Path) -> tuple[float, float]:
    """The kernel floor for hard links as plain Python reaches it: every directory made
    first, then every file linked (`os.link(name, name, src_dir_fd, dst_dir_fd)`) by one
    thread per core over big runs of directories, from a list prepared beforehand.
    Returns (mkdir seconds, link seconds)."""
    groups = [(os.path.relpath(d, tree), files) for d, _, files in os.walk(tree)]
    out.mkdir()
    start = time.perf_counter()
    for rel, _ in groups[1:]:
        os.mkdir(out / rel)
    made = time.perf_counter()

    def link(run: list[tuple[str, list[str]]]) -> None:
        for rel, files in run:
            src = os.open(tree / rel, os.O_RDONLY | os.O_DIRECTORY)
            dst = os.open(out / rel, os.O_RDONLY | os.O_DIRECTORY)
            for name in files:
                os.link(name, name, src_dir_fd=src, dst_dir_fd=dst)
            os.close(src)
            os.close(dst)

    threads = os.cpu_count() or 1
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(link, [groups[i::threads] for i in range(threads)]))
    return made - start, time.perf_counter() - made


def floor(tree: Path, base: Path) -> dict[str, float]:
    """`cp -al` of the source tree and the plain-Python floor, best of 3 each."""
    cp, mk, ln = [], [], []
    for i in range(3):
        start = time.perf_counter()
        subprocess.run(["cp", "-al", str(tree), str(base / f"cp{i}")], check=True)
        cp.append(time.perf_counter() - start)
        made, linked = python_floor(tree, base / f"py{i}")
        mk.append(made)
        ln.append(linked)
        shutil.rmtree(base / f"cp{i}")
        shutil.rmtree(base / f"py{i}")
    best = min(range(3), key=lambda i: mk[i] + ln[i])
    print(
        f"  floor: cp -al {min(cp):.3f} s; python {mk[best] + ln[best]:.3f} s "
        f"({mk[best]:.3f} s mkdir + {ln[best]:.3f} s links, {os.cpu_count()} threads)",
        flush=True,
    )
    return {"cp_al_s": round(min(cp), 3), "python_floor_s": round(mk[best] + ln[best], 3)}


def bench_restore(args: argparse.Namespace) -> None:
    dirs = args.dir or [d for d in ("/dev/shm", tempfile.gettempdir()) if os.path.isdir(d)]
    summary = [bench_restore_in(args, folder) for folder in dirs]
    for figures in summary:
        print(json.dumps(figures))


def bench_restore_in(args: argparse.Namespace, folder: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(dir=folder, prefix="bench-snapshot-") as tmp:
        base = Path(tmp)
        kind = fs_type(tmp)
        start = time.perf_counter()
        total = generate_tree(base / "tree", args.files, args.distinct)
        print(
            f"{folder} ({kind}) tree: {args.files} files, {args.distinct} distinct contents, "
            f"{total / 1e6:.1f} MB (generated in {time.perf_counter() - start:.1f} s); "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        figures: dict[str, object] = {"dir": folder, "fs": kind, "files": args.files}
        if args.floor:
            figures.update(floor(base / "tree", base))
        store = SnapshotStore(base / "store")
        info = store.put(base / "tree", "tree")
        print(
            f"  put                       {info.seconds:7.3f} s wall ({info.new_objects} objects)"
        )
        stats = store.stats()
        print(
            f"  stored {stats.stored_bytes / 1e6:.2f} MB for {stats.logical_bytes / 1e6:.1f} MB"
            f" logical, dedup_ratio {stats.dedup_ratio:.3f}"
        )
        shutil.rmtree(base / "tree")
        blob = (store.manifests / "tree.json.zst").read_bytes()
        decode = []
        for _ in range(3):
            begin = time.perf_counter()
            manifest.decode(blob, Path("tree.json.zst"))
            decode.append(time.perf_counter() - begin)
        print(f"  manifest {len(blob) / 1e3:.0f} kB, decoded (and checked) in {min(decode):.3f} s")
        cold = timed_restore(store, base / "r-cold", "hardlink")
        print("    (cold: the link cache was materialised from the compressed objects)")
        warm = [timed_restore(store, base / f"r-warm{i}", "hardlink") for i in range(args.runs)]
        for i in range(args.runs):
            shutil.rmtree(base / f"r-warm{i}")
        figures.update(
            manifest_decode_s=round(min(decode), 3),
            hardlink_cold_s=round(cold, 3),
            hardlink_warm_min_s=round(min(warm), 3),
            hardlink_warm_median_s=round(statistics.median(warm), 3),
            target_hardlink_s=0.5,
        )
        figures["hardlink_verify_s"] = round(
            timed_restore(store, base / "r-verify", "hardlink", verify=True), 3
        )
        if "reflink" in args.modes:
            figures["reflink_s"] = round(timed_restore(store, base / "r-reflink", "reflink"), 3)
        if "copy" in args.modes:
            figures["copy_s"] = round(timed_restore(store, base / "r-copy", "copy"), 3)
        return figures


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
    failed: list[str] = []
    for n, commit in enumerate(commits.split(), 1):
        if builds.has(commit[:12]) and sources.has(commit[:12]):
            print(f"{n:2d} {commit[:12]} already stored (resumed run)", flush=True)
            continue
        git(repo, "checkout", "-q", "--force", commit)
        prune_stale(repo)
        start = time.perf_counter()
        done = subprocess.run(["make", f"-j{args.jobs}"], cwd=repo, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:  # a commit that does not build is reported and left out
            error = (done.stdout + done.stderr).strip().splitlines()
            print(f"{n:2d} {commit[:12]} make FAILED ({seconds:.1f} s): {error[-4:]}", flush=True)
            failed.append(commit[:12])
            continue
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
    print(f"commits that failed to build (left out of the builds store): {failed or 'none'}")
    for name, store in (("builds (sources + .vo/.glob)", builds), ("sources only", sources)):
        stats = store.stats().as_dict()
        print(f"{name}: {json.dumps(stats)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    restore = sub.add_parser("restore")
    restore.add_argument("--files", type=int, default=100_000)
    restore.add_argument("--distinct", type=int, default=5_000)
    restore.add_argument("--dir", action="append", default=None)
    restore.add_argument("--floor", action="store_true")
    restore.add_argument("--runs", type=int, default=5)
    restore.add_argument("--modes", default="reflink,copy")
    dedup = sub.add_parser("dedup")
    dedup.add_argument("bundle")
    dedup.add_argument("--commits", type=int, default=20)
    dedup.add_argument("--work", default=None)
    dedup.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    bench_restore(args) if args.bench == "restore" else bench_dedup(args)


if __name__ == "__main__":
    main()
