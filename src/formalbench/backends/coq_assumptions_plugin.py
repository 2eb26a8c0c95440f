"""A Coq plugin that answers `Print Assumptions` without walking the same library twice.

Why: `Print Assumptions t` walks every body `t` rests on, library proofs included, on every
call. In the warm coqtop of `coq_session`, which checks candidate after candidate over the
same preloaded libraries, that walk was most of the identity file's cost (a proof over the
Reals: ~1 s, as much as compiling the candidate). The plugin (`ocaml/g_fb_assumptions.mlg`)
adds `Fb_Print_Assumptions t`, whose answer is `Print Assumptions t`'s (the same objects are
reached, judged by the same rules, printed by Coq's own printer), but which keeps what each
object of a *frozen* library refers to: `Fb_Freeze_Assumptions` freezes the libraries loaded
when it runs (the session runs it after its preloads, below its mark, where they stay loaded
for the session's life: `Print Libraries` is checked after each `Reset`). Objects of every
other library, `Candidate`, `Original` and the identity file's own are walked afresh on each
call, as before.

The plugin is OCaml against Coq's own API, so it is built on first use for the Coq at hand
(`coqpp`, then `ocamlfind ocamlopt -package coq-core.vernac`, Debian's
`libcoq-core-ocaml-dev`) into `$FORMALBENCH_CACHE/coq-plugin/<version>-<hash>` (the same cache
discipline as `coq_library`: a lock, a temporary folder renamed into place), then loaded once
by a coqtop that must answer a smoke query exactly. Wherever any step fails (no OCaml
toolchain, another Coq whose API differs, a load error) sessions keep `Print Assumptions`,
and the reason is logged once. FORMALBENCH_COQ_PLUGIN=0 turns the plugin off.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from formalbench.backends.coq_library import coq_version
from formalbench.core.config import cache_path
from formalbench.core.errors import BackendError, ToolchainMissingError
from formalbench.toolchains.toolchain import HOST, Toolchain, resolve

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("ocaml") / "g_fb_assumptions.mlg"
# `<file>:<findlib name>`: the legacy loading Coq 8.16 offers for a plugin outside findlib
LOAD_NAME = "fb_assumptions_plugin:formalbench.fb_assumptions"
LOADER = "load.v"  # the one sentence that loads it, given to coqtop with `-l`
QUERY_VERB = "Fb_Print_Assumptions"
FREEZE = "Fb_Freeze_Assumptions."
BUILD_TIMEOUT = 300.0
_DONE = ".complete"
_lock = threading.Lock()
_known: dict[str, Path | None] = {}  # coqtop path -> plugin folder (None: not available)


def enabled() -> bool:
    return os.environ.get("FORMALBENCH_COQ_PLUGIN", "1") != "0"


def source_hash() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def plugin_folder(coqtop: str | Toolchain) -> Path | None:
    """The folder holding the built plugin and its `load.v` for a toolchain (or a host
    `coqtop`), building it if needed; None where it cannot be built or loaded here (logged
    once per process)."""
    if not enabled():
        return None
    if isinstance(coqtop, Toolchain):
        chain = coqtop
    else:
        found = shutil.which(coqtop) or coqtop
        chain = resolve(HOST, coqc=str(Path(found).with_name("coqc")))
    try:
        key = chain.sandbox_root or chain.program("coqtop")
    except ToolchainMissingError as why:
        log.info("Print Assumptions stays unmemoized: %s", why)
        return None
    with _lock:
        if key not in _known:
            try:
                _known[key] = _build(chain)
            except (
                BackendError,
                ToolchainMissingError,
                OSError,
                subprocess.SubprocessError,
            ) as why:
                log.info("Print Assumptions stays unmemoized: %s", why)
                _known[key] = None
        return _known[key]


def coqtop_args(folder: Path) -> list[str]:
    """The coqtop arguments that load the plugin from `folder` at start."""
    return ["-I", str(folder), "-l", str(folder / LOADER)]


def _build(chain: Toolchain) -> Path:
    root = cache_path("coq-plugin")
    name = f"{coq_version(chain)}-{source_hash()}"
    target = root / (name if chain.is_host else f"{chain.name}-{name}")
    if (target / _DONE).is_file():
        return target
    for tool in ("coqpp", "ocamlfind"):
        chain.program(tool)  # ToolchainMissingError names it: the plugin is then left out
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        if (target / _DONE).is_file():
            return target
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            shutil.copyfile(SOURCE, work / SOURCE.name)
            _run(chain, [chain.program("coqpp"), SOURCE.name], work)
            _run(
                chain,
                [
                    chain.program("ocamlfind"), "ocamlopt", "-shared", "-rectypes", "-thread",
                    "-package", "coq-core.vernac",
                    "-o", "fb_assumptions_plugin.cmxs", SOURCE.with_suffix(".ml").name,
                ],
                work,
            )  # fmt: skip
            (work / LOADER).write_text(f'Declare ML Module "{LOAD_NAME}".\n', encoding="utf-8")
            _smoke_test(chain, work)
            for junk in work.iterdir():
                if junk.suffix not in (".cmxs", ".v"):
                    junk.unlink()
            (work / _DONE).write_text(f"{chain.name}\n", encoding="utf-8")
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log.info("built the Coq assumptions plugin into %s", target)
    return target


def _run(chain: Toolchain, argv: list[str], work: Path) -> str:
    try:
        done = chain.run(argv, cwd=work, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"`{argv[0]}` took over {exc.timeout:.0f}s") from exc
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split())[:300]
        raise BackendError(f"`{' '.join(argv[:2])}` failed: {said}")
    return done.stdout


# `eq_sym` rests on nothing; `classic` is an axiom: one query of each kind
_SMOKE = (
    "Require Coq.Logic.Classical_Prop.\n"
    f"{FREEZE}\n"
    f"{QUERY_VERB} Coq.Init.Logic.eq_sym.\n"
    f"{QUERY_VERB} Coq.Logic.Classical_Prop.NNPP.\n"
)


def _smoke_test(chain: Toolchain, work: Path) -> None:
    """The built plugin must load in the toolchain's coqtop and answer like `Print Assumptions`."""
    coqtop = chain.program("coqtop")
    try:
        done = chain.run(
            [coqtop, "-q", *coqtop_args(work)], cwd=work, timeout=BUILD_TIMEOUT, input=_SMOKE
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"coqtop with the plugin took over {exc.timeout:.0f}s") from exc
    out = done.stdout + done.stderr
    closed = "Closed under the global context" in out
    if done.returncode != 0 or "Error" in out or not closed or "Axioms:" not in out:
        raise BackendError(f"the plugin does not answer in {coqtop}: {out.strip()[-300:]!r}")
