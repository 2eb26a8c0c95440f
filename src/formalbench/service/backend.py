"""The one proof assistant a `formalbench serve` process checks with: Coq or Lean.

One backend per service, not a field per item: a Kimina client sends no language (Kimina is
Lean only), the verdict cache, the warm sessions (Coq's coqtop sessions, Lean's REPL pool) and
`/metrics` are per backend, and two services (one per assistant, on two ports) keep a slow
Lean import from queueing behind Coq checks. The backend is made exactly as `formalbench
check --backend NAME` makes it (`backends.registry.make_backend`), so a verdict of the
service is the CLI's: Coq with `--coq-project`, Lean with `--lean-project` (a Lake project
whose built REPL, or else `lean --json` per file, runs the checks; default: the project
around the folder the service starts in, as `check` finds the one around its file).

`kimina` is not served: a service in front of another Kimina server would only pass its
answers through. A missing toolchain, and an option for the other assistant, are one line
(exit 2).
"""

from __future__ import annotations

from pathlib import Path

from formalbench.backends.base import Backend
from formalbench.backends.registry import make_backend
from formalbench.core.errors import InputError, ToolchainMissingError

SERVED = ("coq", "lean")


def served(name: str, coq_project: str | None, lean_project: str | None) -> str:
    """The assistant `name` names (coq or lean), its project option checked against it; the
    checks `serve --ray` makes before it deploys replicas that each open the backend."""
    key = name.strip().lower()
    if key not in SERVED:
        raise InputError(f"--backend {name!r}: serve checks with one of {', '.join(SERVED)}")
    if coq_project is not None and key != "coq":
        raise InputError("--coq-project is for --backend coq")
    if lean_project is not None and key != "lean":
        raise InputError("--lean-project is for --backend lean")
    return key


def open_backend(
    name: str,
    *,
    workers: int,
    timeout: float,
    coq_project: str | None = None,
    lean_project: str | None = None,
    zygote: bool | None = None,
) -> Backend:
    """The service's backend `name` (coq or lean) with its project, or one clear error.
    `zygote`: Coq candidates compile through warm fork servers (`backends/coq_zygote.py`);
    None: as FORMALBENCH_COQ_ZYGOTE says (`serve` decides: on for Coq unless --no-zygote)."""
    key = served(name, coq_project, lean_project)
    options: dict[str, object] = {"workers": workers, "timeout": timeout}
    if key == "coq":
        if coq_project is not None:
            options["project_dir"] = coq_project
        if zygote is not None:
            options["zygote"] = zygote
        return make_backend("coq", **options)
    if zygote:
        raise InputError("--zygote is for --backend coq (a Lean REPL is warm already)")
    if lean_project is not None:
        project = Path(lean_project)
        if not project.is_dir():
            raise InputError(f"--lean-project {lean_project!r}: not a directory")
        options["project_dir"] = project
    try:
        return make_backend("lean", **options)
    except ToolchainMissingError as exc:
        from formalbench.backends.lean.toolchain import INSTALL_HINT

        # the backend's own line also names `--backend kimina`, which serve does not offer
        first = str(exc).split(";", 1)[0]
        raise ToolchainMissingError(
            f"--backend lean: {first}; {INSTALL_HINT} (with the REPL: `lake build repl`) and "
            "pass --lean-project DIR"
        ) from None
