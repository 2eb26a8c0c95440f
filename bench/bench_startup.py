"""Start-up time of the command line (issue 8, item 8). Prints figures; asserts nothing.

python bench/bench_startup.py [--runs 7] [--importtime 12]

Runs each command N times in a fresh interpreter and prints the median wall time (and the
median CPU time of the child, less sensitive to a busy machine), then the slowest imports of
one run (`python -X importtime`, cumulative microseconds). Commands measured:

  check --static-only   the Coq example pair of datasets/examples/check (also with --json)
  report                a finished eval run (made once with the replay model and an instant
                        stand-in backend, so its report.html is already up to date)
  --help                every sub-command imported (for comparison)
  python -c pass        the interpreter alone
  floor: check libs     only the libraries every `check` needs: typer imported, one pydantic
                        model defined, validated and dumped; no formalbench code at all
  floor: report libs    the same plus rich's console and tables, which `report` prints with

Byte-code is cached between runs (PYTHONPYCACHEPREFIX, a temporary folder), as it is for an
installed package; the first run of each command warms it and is not counted.

The target of the issue is < 0.3 s for `check --static-only` and `report` on a quiet machine;
the load average is printed beside the figures because the machine may be shared.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import formalbench

CHECK = Path(formalbench.__file__).parent / "datasets" / "examples" / "check"
SRC = str(Path(formalbench.__file__).resolve().parents[1])
# Byte-code is cached (in a folder of its own) as an installed package has it: with
# PYTHONDONTWRITEBYTECODE set, every run would compile formalbench's modules again (~0.1 s).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV |= {"PYTHONPATH": SRC, "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="formalbench-pyc-")}


# What the two commands cannot avoid: pydantic with one model built, validated and dumped
# (the first model class imports pydantic's schema machinery; the first validator makes it
# import importlib.metadata to look for plugins), typer (the command line; recent releases
# coerce every option through a pydantic TypeAdapter) and, for the report's tables, rich.
FLOOR_CHECK = (
    "import pydantic, typer.main\n"
    "class Probe(pydantic.BaseModel):\n"
    "    x: int\n"
    "Probe(x=1).model_dump_json()"
)
FLOOR_REPORT = FLOOR_CHECK + "\nimport rich.console, rich.table"


def make_run(root: Path) -> Path:
    """A finished 3-task eval run, written in-process (the eval cost is not measured)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_eval import ANSWER, InstantBackend, write_tasks  # type: ignore[import-not-found]
    from formalbench.cli.main import app
    from formalbench.llm.replay import ScriptedModel
    from formalbench.pipelines.evaluate import run_evaluation
    from formalbench.pipelines.run_config import EvalConfig

    data = write_tasks(root / "tasks.jsonl", 3)
    run_dir = root / "run"
    config = EvalConfig(dataset=str(data), solver="whole", samples=1)
    model = ScriptedModel(lambda call: ANSWER, spec="scripted")
    run_evaluation(config, run_dir, backend=InstantBackend(), model=model)
    # the report command writes report.html once; the timed runs find it up to date
    with contextlib.suppress(SystemExit):
        app(["report", str(run_dir)], standalone_mode=False)
    return run_dir


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and child CPU seconds of one run of argv."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def importtime(argv: list[str], top: int) -> list[tuple[int, str]]:
    """The `top` imports with the largest cumulative time in one run of argv."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        env=ENV,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:") :].split("|")
        try:
            rows.append((int(parts[1]), parts[2].rstrip()))
        except ValueError:
            continue
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--importtime", type=int, default=12, help="top N imports to print")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="formalbench-bench-") as tmp:
        run_dir = make_run(Path(tmp))
        fb = [sys.executable, "-m", "formalbench"]
        check = [*fb, "check", str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v")]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "floor: check libs": [sys.executable, "-c", FLOOR_CHECK],
            "floor: report libs": [sys.executable, "-c", FLOOR_REPORT],
            "check --static-only": [*check, "--static-only"],
            "check --static-only --json": [*check, "--static-only", "--json"],
            "report RUN": [*fb, "report", str(run_dir)],
            "--help": [*fb, "--help"],
        }
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'command':<28} {'median wall':>12} {'median cpu':>11}   runs={args.runs}")
        for name, argv in commands.items():
            timed(argv)  # warm the page cache and .pyc files
            samples = [timed(argv) for _ in range(args.runs)]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            print(f"{name:<28} {wall:>10.3f} s {cpu:>9.3f} s")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for name in ("check --static-only", "report RUN"):
            print(f"\nslowest imports of `{name}` (cumulative ms):")
            for micros, module in importtime(commands[name], args.importtime):
                print(f"  {micros / 1000:8.1f}  {module.strip()}")


if __name__ == "__main__":
    main()
