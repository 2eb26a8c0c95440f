"""Figures for issue 29 (security round 4): refused POSTs against the event loop (item 3), and
hostile Coq projects against the load-path walk (item 4).

    python bench/bench_security29.py loop [--src DIR] [--runs 3]
    python bench/bench_security29.py project [--src DIR] [--runs 3] [--limit 20]

`--src` names the `src` folder of the formalbench to measure (default: this checkout's), so
the same script gives the figures before and after a change (e.g. a `git archive` of the
base commit). Each project case runs in its own process under a 1 GiB address-space cap and
a wall-clock limit; the loop case serves the review page with uvicorn in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

LOOP = textwrap.dedent(
    """
    import socket, threading, time, sys, json
    from pathlib import Path
    import httpx, uvicorn
    from formalbench.core.formalization import Candidate, CompileRound, Problem
    from formalbench.dashboard.app import create_app
    from formalbench.store.formalize import FormalizeStore

    root = Path(sys.argv[1])
    root.mkdir(parents=True, exist_ok=True)
    with FormalizeStore(root / "formalize.sqlite") as store:
        store.set_config({"config": {"backend": "coq", "timeout": 60}})
        store.add_problems([Problem(id="p1", informal="Show True.")])
        code = "Theorem t : True.\\nAdmitted.\\n"
        store.put_candidate(Candidate(id="c1", problem_id="p1", model="m", sample=0,
                                      language="coq",
                                      rounds=[CompileRound(round=1, code=code, compiled=True)]))
    sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(root), log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    # 1,000,000 characters (the page's own limit), 9 MB percent-encoded: distinct lines
    big = "".join(f"(* {i:06d} ℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕℕ *)\\n"
                  for i in range(13_000))
    posts = []
    def attack():
        with httpx.Client(timeout=120) as web:
            t = time.perf_counter()
            web.post(base + "/decide", data={"problem_id": "p1", "candidate_id": "c1",
                                             "code": big})
            posts.append(time.perf_counter() - t)
    with httpx.Client(base_url=base, timeout=120) as web:
        web.get("/")
        quiet = []
        for _ in range(5):
            t = time.perf_counter(); web.get("/"); quiet.append(time.perf_counter() - t)
        threads = [threading.Thread(target=attack) for _ in range(4)]
        for t in threads: t.start()
        loaded = []
        while any(t.is_alive() for t in threads) or len(loaded) < 3:
            t = time.perf_counter(); web.get("/"); loaded.append(time.perf_counter() - t)
        for t in threads: t.join()
    server.should_exit = True
    print(json.dumps({"quiet_max": max(quiet), "loaded_max": max(loaded), "gets": len(loaded),
                      "loaded_median": sorted(loaded)[len(loaded) // 2], "post_max": max(posts)}))
    """
)

PROJECT = textwrap.dedent(
    """
    import sys, time
    from formalbench.backends.coq_project import read_coq_project
    t = time.perf_counter()
    try:
        project = read_coq_project(sys.argv[1])
        project.digest()
        said = "accepted: " + " ".join(project.args)[:80]
    except BaseException as exc:
        said = type(exc).__name__ + ": " + (str(exc).splitlines() or [""])[0][:160]
    print(f"{time.perf_counter() - t:.2f}s {said}")
    """
)


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "FORMALBENCH_TOOLCHAIN": "host"}


def loop(src: Path, runs: int) -> None:
    for n in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run(
                [sys.executable, "-c", LOOP, str(Path(folder) / "run")],
                env=_env(src),
                capture_output=True,
                text=True,
                timeout=600,
            )
        if done.returncode:
            print(f"run {n + 1}: failed: {done.stderr.strip()[-300:]}")
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"run {n + 1}: GET / quiet max {got['quiet_max']:.3f} s; {got['gets']} GETs during "
            f"4 refused 9 MB POSTs: median {got['loaded_median']:.3f} s, max "
            f"{got['loaded_max']:.3f} s; slowest refusal answered in {got['post_max']:.2f} s"
        )


def _cases(base: Path) -> dict[str, Path]:
    cases = {}
    for name, line in (
        ("-I /proc", "-I /proc\n"),
        ("-R root Lib (root -> /)", "-R root Lib\n"),
        ("-R theories Lib (theories/loop -> ..)", "-R theories Lib\n"),
        ("sparse 3 GB _CoqProject", None),
    ):
        folder = base / name.split()[0].strip("-") / str(len(cases))
        (folder / "theories").mkdir(parents=True)
        (folder / "root").symlink_to("/")
        (folder / "theories" / "loop").symlink_to("..")
        project = folder / "_CoqProject"
        if line is None:
            with open(project, "wb") as handle:
                handle.truncate(3 << 30)
        else:
            project.write_text(line)
        cases[name] = folder
    return cases


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def project(src: Path, runs: int, limit: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, where in _cases(Path(folder)).items():
            for n in range(runs):
                started = time.perf_counter()
                try:
                    done = subprocess.run(
                        [sys.executable, "-c", PROJECT, str(where)],
                        env=_env(src),
                        capture_output=True,
                        text=True,
                        timeout=limit,
                        preexec_fn=_capped,
                    )
                    said = (done.stdout.strip() or done.stderr.strip().splitlines()[-1])[:200]
                except subprocess.TimeoutExpired:
                    said = f"still walking after {limit:.0f} s (stopped)"
                took = time.perf_counter() - started
                print(f"{name} | run {n + 1} | {took:.2f} s wall | {said}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["loop", "project"])
    parser.add_argument("--src", type=Path, default=HERE / "src")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=20.0)
    args = parser.parse_args()
    if args.what == "loop":
        loop(args.src.resolve(), args.runs)
    else:
        project(args.src.resolve(), args.runs, args.limit)
    print(f"(load average while measuring: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
