"""How long formalbench's Coq plugin takes to build, per toolchain (wall clock).

Each run builds into a fresh, empty cache (coqpp, ocamlfind ocamlopt of the plugin's files
and the smoke coqtop, all run by the toolchain: in its root through bwrap for a provisioned
one), then asks again with the cache filled (marker, hash, private copy).

    python bench/bench_plugin_build.py [--runs 3] [TOOLCHAIN ...]   # default: host rocq-9.2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.core.errors import ToolchainMissingError
from formalbench.toolchains.toolchain import resolve


def measure(name: str, runs: int) -> str:
    try:
        chain = resolve(name)  # before the cache moves: toolchains live in the real cache
    except ToolchainMissingError as why:
        return f"{name}: {why}"
    version = chain.version()
    built, cached = [], []
    saved = os.environ.get("FORMALBENCH_CACHE")
    try:
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="fb-plugin-bench-") as cache:
                os.environ["FORMALBENCH_CACHE"] = cache
                for times in (built, cached):
                    plugin._known.clear()
                    started = time.perf_counter()
                    if plugin.plugin_folder(chain) is None:
                        return f"{name} ({version}): the plugin does not build (see the log)"
                    times.append(time.perf_counter() - started)
    finally:
        if saved is None:
            os.environ.pop("FORMALBENCH_CACHE", None)
        else:
            os.environ["FORMALBENCH_CACHE"] = saved
    show = ", ".join(f"{t:.2f}" for t in built)
    return f"{name} ({version}): build+smoke {show} s; cached {max(cached):.2f} s at most"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("toolchains", nargs="*", default=["host", "rocq-9.2"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name in args.toolchains:
        print(measure(name, args.runs), flush=True)


if __name__ == "__main__":
    main()
