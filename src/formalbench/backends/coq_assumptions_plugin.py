"""formalbench's Coq plugin: built on first use, trusted by content hash, loaded by absolute path.

Why a plugin: Coq's kernel objects are only readable as data from OCaml. The plugin
(`ocaml/`: `g_fb_assumptions.mlg` declares the commands; `fb_json.ml`, `fb_dump.ml` and,
per kernel API, `coq816/fb_kernel.ml` and `coq816/fb_memo.ml` hold the code) adds

* `Fb_Print_Assumptions t`: `Print Assumptions t`'s answer, but remembering the walk of the
  libraries frozen by `Fb_Freeze_Assumptions` (the warm session's preloads), so that a
  proof over the Reals does not pay the stdlib walk at every check;
* `Fb_Kernel_Dump` / `Fb_Kernel_Dump_Library`: the kernel dump read by `coq_kernel_dump`.

It is OCaml against Coq's own API, so it is built for the Coq at hand (`coqpp`, then
`ocamlfind ocamlopt -package coq-core.vernac`, Debian's `libcoq-core-ocaml-dev`) into
`$FORMALBENCH_CACHE/coq-plugin/<version>-<source hash>` (a lock, a temporary folder renamed
into place). Wherever a step fails, sessions keep `Print Assumptions` (logged once) and the
kernel dump is unavailable (its callers say so). FORMALBENCH_COQ_PLUGIN=0 turns it off.

Trust (issue 28): no search path can substitute another file for ours.

* Coq 8.16 loads `Declare ML Module "file:findlib.name"` (the legacy form) by looking
  `file.cmxs` up in its ML path (`-I` folders, in order, and the current folder) unless
  `file` is an absolute path, which `System.find_file_in_path` takes as is; the findlib
  form (`"pkg.name"`) asks findlib (OCAMLPATH). So the plugin is loaded by absolute path,
  and no `-I` folder of ours is given at all: a project's `-I` folder holding a file named
  like ours is never searched for it. Once loaded, a plugin is known by its findlib name,
  so a library that declares the same name later cannot load another file under it.
* The file loaded is a private copy (`formalbench-plugin-<pid>-*` in the temporary folder,
  0700, read-only inside every sandbox like the whole file system) of bytes whose sha256
  was checked against the hash recorded when the plugin was built; before every process
  that loads it (`coqtop_args`), the copy is hashed again.
* The cache is accepted only as formalbench left it: the marker holds the build's sha256
  (a marker of any other form, a hash that does not match, a folder or file another user
  owns or that others may write: built again); and where a sandboxed process could write
  the cache (no bwrap, or FORMALBENCH_SANDBOX_WRITABLE covers it), the cache is not read
  at all: each formalbench process builds its own copy.
What remains trusted is what every check trusts: the user's own account outside the
sandbox (which can replace formalbench itself) and the installed Coq.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from formalbench.backends import sandbox
from formalbench.backends.coq_library import coq_version
from formalbench.core.config import cache_path
from formalbench.core.errors import BackendError

log = logging.getLogger(__name__)

OCAML = Path(__file__).with_name("ocaml")
GRAMMAR = OCAML / "g_fb_assumptions.mlg"
SOURCE = GRAMMAR  # kept for callers that name the grammar file
# The seam between Coq versions: `fb_kernel.ml` and `fb_memo.ml` are written against one
# kernel API each, in a folder per API (a Rocq 9.2 build adds its folder and its findlib
# package here); `fb_json.ml`, `fb_dump.ml` and the grammar are shared.
API_FOLDERS = {"8.16": ("coq816", "coq-core.vernac")}
VERSIONED = ("fb_kernel.ml", "fb_memo.ml")
PLUGIN_FILE = "fb_assumptions_plugin.cmxs"
FINDLIB_NAME = "formalbench.fb_assumptions"
LOADER = "load.v"  # the one sentence that loads it, given to coqtop with `-l`
QUERY_VERB = "Fb_Print_Assumptions"
FREEZE = "Fb_Freeze_Assumptions."
DUMP_VERB = "Fb_Kernel_Dump"
DUMP_EXACT_VERB = "Fb_Kernel_Dump_Exact"
DUMP_LIBRARY_VERB = "Fb_Kernel_Dump_Library"
BUILD_TIMEOUT = 300.0
_DONE = ".complete"
_lock = threading.Lock()
_known: dict[str, Path | None] = {}  # coqtop path -> private plugin folder (None: unavailable)
_hashes: dict[Path, str] = {}  # private plugin folder -> sha256 of its plugin file


class PluginTampered(BackendError):
    """The plugin file about to be loaded is not the one formalbench built and checked."""


@dataclass(frozen=True)
class BuiltPlugin:
    folder: Path
    sha256: str


def enabled() -> bool:
    return os.environ.get("FORMALBENCH_COQ_PLUGIN", "1") != "0"


def api(version: str) -> tuple[Path, str]:
    """The folder of version-specific sources and the findlib package for Coq `version`."""
    key = ".".join(version.split(".")[:2])
    if key not in API_FOLDERS:
        known = ", ".join(sorted(API_FOLDERS))
        raise BackendError(f"the plugin has no sources for Coq {version} (it has: {known})")
    folder, package = API_FOLDERS[key]
    return OCAML / folder, package


def modules(version: str) -> list[Path]:
    """The OCaml files of the plugin for Coq `version`, in link order (the grammar's
    generated file comes last)."""
    versioned, _ = api(version)
    return [OCAML / "fb_json.ml", *(versioned / v for v in VERSIONED), OCAML / "fb_dump.ml"]


def sources(version: str) -> list[Path]:
    return [*modules(version), GRAMMAR]


def source_hash(version: str) -> str:
    digest = hashlib.sha256()
    for path in sources(version):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plugin_folder(coqtop: str) -> Path | None:
    """A private folder holding a checked copy of the plugin and its `load.v` for `coqtop`,
    building the plugin if needed; None where it cannot be built or loaded here (logged
    once per process)."""
    if not enabled():
        return None
    found = shutil.which(coqtop) or coqtop
    with _lock:
        if found not in _known:
            try:
                _known[found] = _private_copy(_built(found))
            except (BackendError, OSError, subprocess.SubprocessError) as why:
                log.info("the Coq plugin is not available: %s", why)
                _known[found] = None
        return _known[found]


def verify(folder: Path) -> Path:
    """The plugin file of `folder` (a `plugin_folder` answer), after checking that its
    content is still the one checked when the folder was made; PluginTampered otherwise."""
    expected = _hashes.get(folder)
    path = folder / PLUGIN_FILE
    if expected is None:
        raise PluginTampered(f"{folder} is not a plugin folder formalbench made")
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise PluginTampered(f"the plugin file cannot be read: {exc}") from exc
    if actual != expected:
        raise PluginTampered(f"the plugin file {path} changed since it was checked")
    return path


def coqtop_args(folder: Path) -> list[str]:
    """The coqtop/coqc arguments that load the plugin from `folder` at start (only `-l` of
    our own `load.v`, which names the plugin by absolute path: no ML search path is
    given), after checking its hash (PluginTampered)."""
    verify(folder)
    return ["-l", str(folder / LOADER)]


def declare_sentence(folder: Path) -> str:
    """The sentence that loads the plugin file of `folder` by absolute path."""
    stem = (folder / PLUGIN_FILE).with_suffix("")
    if ":" in str(stem) or '"' in str(stem) or not stem.is_absolute():
        raise BackendError(f"the plugin path {stem} cannot be named in `Declare ML Module`")
    return f'Declare ML Module "{stem}:{FINDLIB_NAME}".\n'


# --- the private copy -------------------------------------------------------------------
_private: list[Path] = []


def _private_copy(built: BuiltPlugin) -> Path:
    """Copy the checked bytes of the built plugin into a private folder of this process."""
    data = (built.folder / PLUGIN_FILE).read_bytes()
    if hashlib.sha256(data).hexdigest() != built.sha256:
        raise PluginTampered(f"the plugin in {built.folder} does not have the hash recorded")
    folder = Path(
        tempfile.mkdtemp(prefix=f"formalbench-plugin-{os.getpid()}-", dir=tempfile.gettempdir())
    ).resolve()
    _private.append(folder)
    (folder / PLUGIN_FILE).write_bytes(data)
    os.chmod(folder / PLUGIN_FILE, 0o500)
    (folder / LOADER).write_text(declare_sentence(folder), encoding="utf-8")
    os.chmod(folder / LOADER, 0o400)
    _hashes[folder] = built.sha256
    return folder


@atexit.register
def _remove_private() -> None:
    for folder in _private:
        shutil.rmtree(folder, ignore_errors=True)


# --- the cache ---------------------------------------------------------------------------
def cache_trusted(root: Path) -> str | None:
    """Why the plugin cache under `root` may not be read across processes, or None.

    A sandboxed process must not be able to write it: with bwrap the whole file system is
    read-only there except each process's work folder and FORMALBENCH_SANDBOX_WRITABLE."""
    if sandbox.isolation() != "bwrap":
        return "assistant processes are not confined by bwrap here"
    resolved = root.resolve()
    for writable in sandbox._writable():
        w = Path(writable).resolve()
        if resolved == w or w in resolved.parents or resolved in w.parents:
            return f"FORMALBENCH_SANDBOX_WRITABLE leaves {w} writable"
    return None


def _owned_and_private(path: Path) -> bool:
    info = path.lstat()
    return (
        info.st_uid == os.getuid()
        and not stat.S_ISLNK(info.st_mode)
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _read_marker(target: Path) -> str | None:
    """The sha256 recorded in `target`'s marker, where the folder is as formalbench left
    it and the plugin file has that hash; None otherwise (it is then built again)."""
    marker = target / _DONE
    plugin = target / PLUGIN_FILE
    try:
        if not all(_owned_and_private(p) for p in (target.parent, target, marker, plugin)):
            return None
        record = json.loads(marker.read_text(encoding="utf-8"))
        expected = record["sha256"] if isinstance(record, dict) else None
        if not isinstance(expected, str) or len(expected) != 64:
            return None
        return expected if sha256_file(plugin) == expected else None
    except (OSError, ValueError, KeyError):
        return None


def _built(coqtop: str) -> BuiltPlugin:
    coqc = str(Path(coqtop).with_name("coqc"))
    root = cache_path("coq-plugin")
    version = coq_version(coqc)
    name = f"{version}-{source_hash(version)}"
    distrust = cache_trusted(root)
    if distrust is not None:
        log.info("the Coq plugin is built for this process only: %s", distrust)
        work = Path(tempfile.mkdtemp(prefix=f"formalbench-pluginbuild-{os.getpid()}-"))
        _private.append(work)
        return BuiltPlugin(work, _build_in(coqtop, version, work))
    target = root / name
    recorded = _read_marker(target)
    if recorded is not None:
        return BuiltPlugin(target, recorded)
    for tool in ("coqpp", "ocamlfind"):
        if shutil.which(tool) is None:
            raise BackendError(f"`{tool}` is not installed (Debian: libcoq-core-ocaml-dev)")
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    with open(root / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        recorded = _read_marker(target)
        if recorded is not None:
            return BuiltPlugin(target, recorded)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            digest = _build_in(coqtop, version, work)
            for junk in work.iterdir():
                if junk.name != PLUGIN_FILE:
                    junk.unlink()
            (work / _DONE).write_text(
                json.dumps({"sha256": digest, "coqtop": coqtop}) + "\n", encoding="utf-8"
            )
            os.chmod(work, 0o700)
            if target.exists() or target.is_symlink():
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink()
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log.info("built the Coq plugin into %s", target)
    return BuiltPlugin(target, digest)


def _build_in(coqtop: str, version: str, work: Path) -> str:
    """Build the plugin in `work` and smoke-test it; the sha256 of the plugin file."""
    _, package = api(version)
    for path in sources(version):
        shutil.copyfile(path, work / path.name)
    _run(["coqpp", GRAMMAR.name], work)
    _run(
        [
            "ocamlfind", "ocamlopt", "-shared", "-rectypes", "-thread",
            "-package", package, "-o", PLUGIN_FILE,
            *(p.name for p in modules(version)), GRAMMAR.with_suffix(".ml").name,
        ],
        work,
    )  # fmt: skip
    digest = sha256_file(work / PLUGIN_FILE)
    _smoke_test(coqtop, work)
    return digest


def _run(argv: list[str], work: Path) -> str:
    try:
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
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


def _smoke_test(coqtop: str, work: Path) -> None:
    """The built plugin must load in `coqtop` (by absolute path) and answer like `Print
    Assumptions`."""
    try:
        done = subprocess.run(
            [coqtop, "-q"],
            input=declare_sentence(work.resolve()) + _SMOKE,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"coqtop with the plugin took over {exc.timeout:.0f}s") from exc
    out = done.stdout + done.stderr
    closed = "Closed under the global context" in out
    if done.returncode != 0 or "Error" in out or not closed or "Axioms:" not in out:
        raise BackendError(f"the plugin does not answer in {coqtop}: {out.strip()[-300:]!r}")
