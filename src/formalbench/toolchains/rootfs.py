"""The bwrap command line that runs a program of a toolchain root with that root as `/`.

The root's own top-level folders (`usr`, `etc`, `var`) are bound read-only at `/usr`, `/etc`,
`/var` and its merged-/usr links recreated (`/bin` -> `usr/bin`, ...), on bwrap's fresh tmpfs
`/`, rather than the root bound at `/` itself: the work folder and the read-only inputs are then
bound at the same absolute paths as on the host (bwrap can create their mount points in the
tmpfs, not in a read-only root), so every path in argv, in coqc's messages and in a
`_CoqProject` means the same inside and out. `/tmp` is a private tmpfs, `/proc` and `/dev`
are bwrap's own, the network is unshared. A folder that would land inside the root's own
folders (`/usr/...`) is refused: it would hide or be hidden by the toolchain's files.

A root toolchain has no way to run without bwrap (its binaries expect its own libc and its
own `/usr/lib/.../coq`), so this ignores FORMALBENCH_SANDBOX=none; `bwrap_program()` is None
where bwrap cannot start, and the callers say so in one line.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from formalbench.core.errors import ToolchainMissingError

#: links a merged-/usr Debian system has at its top level (base-files makes them, not packages)
MERGED_USR = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
_MOUNTED = {"proc", "dev", "tmp"}  # bwrap's own, never the root's
PATH_IN_ROOT = "/usr/bin:/bin"
#: what a program of a root runs with: its own PATH, and OCaml 5's domain count held down. By
#: default OCaml 5 reserves address space for 128 domains at start, which any address-space
#: cap (the sandbox's 4 GiB, even 16 GiB) refuses: "Fatal error: Not enough heap memory to
#: reserve minor heaps". Coq runs on one domain; 16 leaves room.
ENV_IN_ROOT = {"PATH": PATH_IN_ROOT, "OCAMLRUNPARAM": "d=16"}


@functools.cache
def bwrap_program() -> str | None:
    """`bwrap` when it can start a namespace here (probed once), else None."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    with tempfile.TemporaryDirectory(prefix="formalbench-probe-") as folder:
        try:
            done = subprocess.run(
                [found, "--ro-bind", "/", "/", "--chdir", folder, "--unshare-net", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    return found if done.returncode == 0 else None


def _root_binds(root: Path) -> list[str]:
    args: list[str] = []
    for entry in sorted(os.listdir(root)):
        if entry in _MOUNTED:
            continue
        path = root / entry
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{entry}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{entry}"]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def _check_outside(root: Path, path: str) -> None:
    top = Path(path).parts[1] if len(Path(path).parts) > 1 else ""
    if top and top not in _MOUNTED and (root / top).exists():
        raise ToolchainMissingError(
            f"{path} cannot be shown to the toolchain in {root}: it lies under /{top}, "
            "which is the toolchain's own folder (use a work or cache folder elsewhere)"
        )


def program_in(root: Path, name: str) -> str:
    """The absolute path inside the root of program `name` (`coqc`, `/usr/bin/coqc` or a
    host path under the root); ToolchainMissingError when the root has no such program."""
    text = str(name)
    if text.startswith(str(root) + os.sep):
        text = "/" + os.path.relpath(text, root)
    inside = text if text.startswith("/") else f"/usr/bin/{text}"
    if not (root / inside.lstrip("/")).exists():
        raise ToolchainMissingError(f"the toolchain in {root} has no program {inside}")
    return inside


def root_argv(
    root: Path,
    argv: Sequence[str],
    *,
    work: str | os.PathLike[str],
    writable: Sequence[str] = (),
    read_only: Sequence[str] = (),
) -> list[str]:
    """bwrap + `argv` run with `root` as `/`, in `work` (bound writable at its own path), the
    absolute folders `writable` and `read_only` bound likewise (read-only ones last, so they
    stay read-only inside a writable one). Raises ToolchainMissingError without bwrap."""
    bwrap = bwrap_program()
    if bwrap is None:
        raise ToolchainMissingError(
            "a provisioned toolchain runs only through bubblewrap, and `bwrap` cannot start "
            "here; use --toolchain host"
        )
    folder = os.path.abspath(work)
    binds: list[str] = []
    for path in [*writable, folder]:
        _check_outside(root, path)
        binds += ["--bind", path, path]
    for path in read_only:
        _check_outside(root, path)
        binds += ["--ro-bind", path, path]
    inner = [program_in(root, argv[0]), *argv[1:]]
    return [
        bwrap,
        *_root_binds(root),
        *binds,
        "--unshare-net",
        "--unshare-ipc",
        "--die-with-parent",
        "--chdir", folder,
        "--",
        *inner,
    ]  # fmt: skip
