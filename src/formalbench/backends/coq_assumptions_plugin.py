"""formalbench's Coq plugin: built on first use, trusted by content hash, loaded by absolute path.

Why a plugin: Coq's kernel objects are only readable as data from OCaml. The plugin
(`ocaml/`: `g_fb_assumptions.mlg` declares the commands; `fb_json.ml`, `fb_dump.ml` and,
per kernel API, `coq816/fb_kernel.ml` and `coq816/fb_memo.ml` hold the code) adds

* `Fb_Print_Assumptions t`: `Print Assumptions t`'s answer, but remembering the walk of the
  libraries frozen by `Fb_Freeze_Assumptions` (the warm session's preloads, named), so that
  a proof over the Reals does not pay the stdlib walk at every check; a frozen library is
  trusted only while the very module body frozen is loaded (`Candidate` is loaded again,
  with other content, at every check; fb_memo.ml);
* `Fb_Kernel_Dump` / `Fb_Kernel_Dump_Library`: the kernel dump read by `coq_kernel_dump`.

It is OCaml against Coq's own API, so it is built for the toolchain at hand
(`toolchains/`: the host's Coq, or a provisioned root whose programs run through bwrap): the
sources of that API's folder (`API_FOLDERS`, chosen by the running version: `coq816/` with
findlib package `coq-core.vernac`, `coq820/` (Coq 8.20) with the same, `coq92/` with
`rocq-runtime.vernac`), `coqpp`, then
`ocamlfind ocamlopt`, all run by the toolchain (Debian's `libcoq-core-ocaml-dev` on the
host and in the root), into `$FORMALBENCH_CACHE/coq-plugin/[<toolchain>-]<version>-<source
hash>` (a lock, a temporary folder renamed into place). Wherever a step fails, sessions keep
`Print Assumptions` (logged once) and the kernel dump is unavailable (its callers say so).
FORMALBENCH_COQ_PLUGIN=0 turns it off.

Trust (issue 28): no search path can substitute another file for ours.

* Coq 8.16 loads `Declare ML Module "file:findlib.name"` (the legacy form) by looking
  `file.cmxs` up in its ML path (`-I` folders, in order, and the current folder) unless
  `file` is an absolute path, which `System.find_file_in_path` takes as is; the findlib
  form (`"pkg.name"`) asks findlib (OCAMLPATH). So the plugin is loaded by absolute path,
  and no `-I` folder of ours is given at all: a project's `-I` folder holding a file named
  like ours is never searched for it. Once loaded, a plugin is known by its findlib name,
  so a library that declares the same name later cannot load another file under it.
* Rocq 9 dropped that form (`"file:pkg"` warns and ignores `file`): a plugin is found by
  findlib only. Rocq's findlib search path is the `-I` folders in command-line order, then
  OCAMLPATH, then the installation's own (sysinit/coqinit.ml: `ml_includes @ boot_ml_path
  @ OCAMLPATH`; coqargs keeps `-I` in the order given); the current folder is not in it.
  So the private folder holds `formalbench/META` and the plugin file, and `-I <that
  folder>` is the FIRST argument after the program: findlib takes the first folder that
  has a `formalbench` package, ours, whatever `-I` a project adds after it (a provisioned
  root's processes get no OCAMLPATH of the host's; `Toolchain.env`). The META and the
  sentence that loads it are ours and checked byte for byte with the plugin's hash.
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
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from formalbench.backends import sandbox
from formalbench.backends.coq_library import coq_version
from formalbench.backends.coq_queries import QUALID
from formalbench.core.config import cache_path
from formalbench.core.errors import BackendError, ToolchainMissingError
from formalbench.toolchains.toolchain import HOST, Toolchain, resolve

log = logging.getLogger(__name__)

OCAML = Path(__file__).with_name("ocaml")
GRAMMAR = OCAML / "g_fb_assumptions.mlg"
SOURCE = GRAMMAR  # kept for callers that name the grammar file


@dataclass(frozen=True)
class Api:
    """One kernel API: its folder of sources, the findlib package it links against, and
    how that Coq loads a plugin of ours (`legacy`: by absolute file; `findlib`: by package,
    from our folder first on the ML path)."""

    folder: str
    package: str
    loading: str
    smoke_require: str
    smoke_closed: str  # a lemma that rests on nothing
    smoke_axiom: str  # a lemma that rests on `classic`


# The seam between Coq versions: `fb_kernel.ml` and `fb_memo.ml` are written against one
# kernel API each, in a folder per API; `fb_json.ml`, `fb_dump.ml` and the grammar are shared.
API_FOLDERS = {
    "8.16": Api(
        "coq816", "coq-core.vernac", "legacy", "Require Coq.Logic.Classical_Prop.",
        "Coq.Init.Logic.eq_sym", "Coq.Logic.Classical_Prop.NNPP",
    ),
    "8.20": Api(
        "coq820", "coq-core.vernac", "legacy", "Require Coq.Logic.Classical_Prop.",
        "Coq.Init.Logic.eq_sym", "Coq.Logic.Classical_Prop.NNPP",
    ),
    "9.2": Api(
        "coq92", "rocq-runtime.vernac", "findlib", "From Stdlib Require Classical_Prop.",
        "Corelib.Init.Logic.eq_sym", "Stdlib.Logic.Classical_Prop.NNPP",
    ),
}  # fmt: skip
VERSIONED = ("fb_kernel.ml", "fb_memo.ml")
PLUGIN_FILE = "fb_assumptions_plugin.cmxs"
FINDLIB_NAME = "formalbench.fb_assumptions"
FINDLIB_PACKAGE = "formalbench"  # the top package of FINDLIB_NAME: its folder holds META
# the META of the findlib layout: our one sub-package, our one file, nothing it requires
# (the API it links against is part of the running coqtop)
META = f'package "fb_assumptions" (\n  plugin(native) = "{PLUGIN_FILE}"\n)\n'
LOADER = "load.v"  # the one sentence that loads it, given to coqtop with `-l`
QUERY_VERB = "Fb_Print_Assumptions"
FREEZE = "Fb_Freeze_Assumptions."  # every library loaded now (one-shot files, the smoke test)
MEMO_STATUS = "Fb_Memo_Status."  # the frozen libraries and the number of objects remembered
DUMP_VERB = "Fb_Kernel_Dump"
DUMP_EXACT_VERB = "Fb_Kernel_Dump_Exact"
DUMP_LIBRARY_VERB = "Fb_Kernel_Dump_Library"
BUILD_TIMEOUT = 300.0
_DONE = ".complete"
_lock = threading.Lock()
_known: dict[str, Path | None] = {}  # coqtop or root -> private plugin folder (None: unavailable)
_hashes: dict[Path, tuple[str, str]] = {}  # private folder -> (sha256 of its plugin, loading)


def freeze_sentence(libraries: Iterable[str]) -> str:
    """`Fb_Freeze_Assumptions` of exactly these loaded libraries (Coq qualids, as `Print
    Libraries` lists them): a session names the libraries it preloaded itself."""
    names = sorted(set(libraries))
    if not all(re.fullmatch(QUALID, n) for n in names):
        raise ValueError("a library to freeze is not a Coq name")
    return " ".join(["Fb_Freeze_Assumptions", *(f'"{n}"' for n in names)]) + "."


class PluginTampered(BackendError):
    """The plugin file about to be loaded is not the one formalbench built and checked."""


@dataclass(frozen=True)
class BuiltPlugin:
    folder: Path
    sha256: str
    loading: str = "legacy"


def enabled() -> bool:
    return os.environ.get("FORMALBENCH_COQ_PLUGIN", "1") != "0"


def api_of(version: str) -> Api:
    """The kernel API of Coq/Rocq `version` (`8.16.1`, `9.2`, `9.2.0`)."""
    key = ".".join(version.split(".")[:2])
    if key not in API_FOLDERS:
        known = ", ".join(sorted(API_FOLDERS))
        raise BackendError(f"the plugin has no sources for Coq {version} (it has: {known})")
    return API_FOLDERS[key]


def api(version: str) -> tuple[Path, str]:
    """The folder of version-specific sources and the findlib package for Coq `version`."""
    chosen = api_of(version)
    return OCAML / chosen.folder, chosen.package


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


def _chain(coqtop: str | Toolchain) -> Toolchain:
    if isinstance(coqtop, Toolchain):
        return coqtop
    found = shutil.which(coqtop) or coqtop
    return resolve(HOST, coqc=str(Path(found).with_name("coqc")))


def plugin_folder(coqtop: str | Toolchain) -> Path | None:
    """A private folder holding a checked copy of the plugin and its `load.v` for a
    toolchain (or a host `coqtop`), building the plugin if needed; None where it cannot be
    built or loaded here (logged once per process)."""
    if not enabled():
        return None
    try:
        chain = _chain(coqtop)
        key = chain.sandbox_root or chain.program("coqtop")
    except ToolchainMissingError as why:
        log.info("the Coq plugin is not available: %s", why)
        return None
    with _lock:
        if key not in _known:
            try:
                _known[key] = _private_copy(_built(chain))
            except (
                BackendError,
                ToolchainMissingError,
                OSError,
                subprocess.SubprocessError,
            ) as why:
                log.info("the Coq plugin is not available: %s", why)
                _known[key] = None
        return _known[key]


def plugin_file(folder: Path, loading: str) -> Path:
    """Where the plugin file lies in a folder of the `loading` layout."""
    return folder / FINDLIB_PACKAGE / PLUGIN_FILE if loading == "findlib" else folder / PLUGIN_FILE


def verify(folder: Path) -> Path:
    """The plugin file of `folder` (a `plugin_folder` answer), after checking that its
    content, its META and its `load.v` are still those checked when the folder was made;
    PluginTampered otherwise."""
    known = _hashes.get(folder)
    if known is None:
        raise PluginTampered(f"{folder} is not a plugin folder formalbench made")
    expected, loading = known
    path = plugin_file(folder, loading)
    try:
        actual = sha256_file(path)
        loader = (folder / LOADER).read_text(encoding="utf-8")
        meta = (folder / FINDLIB_PACKAGE / "META").read_text() if loading == "findlib" else META
    except OSError as exc:
        raise PluginTampered(f"the plugin file cannot be read: {exc}") from exc
    if actual != expected:
        raise PluginTampered(f"the plugin file {path} changed since it was checked")
    if loader != declare_sentence(folder, loading) or meta != META:
        raise PluginTampered(f"the loading files of {folder} changed since they were written")
    return path


def loading_of(folder: Path) -> str:
    known = _hashes.get(folder)
    if known is None:
        raise PluginTampered(f"{folder} is not a plugin folder formalbench made")
    return known[1]


def ml_path_args(folder: Path) -> list[str]:
    """The arguments that must come FIRST after the program for the plugin of `folder` to
    be the one loaded: `-I <folder>` for the findlib layout (Rocq 9), none for the legacy
    one (Coq 8.16 loads it by absolute path and is given no ML path)."""
    return ["-I", str(folder)] if loading_of(folder) == "findlib" else []


def coqtop_args(folder: Path) -> list[str]:
    """The coqtop/coqc arguments that load the plugin from `folder` at start, to be put
    FIRST after the program (`ml_path_args`, then `-l` of our own `load.v`), after checking
    its hash (PluginTampered)."""
    verify(folder)
    return [*ml_path_args(folder), "-l", str(folder / LOADER)]


def declare_sentence(folder: Path, loading: str | None = None) -> str:
    """The sentence that loads the plugin of `folder`: by absolute path (legacy), or by
    its findlib name, found in `folder` given first with `-I` (findlib)."""
    if (loading or loading_of(folder)) == "findlib":
        return f'Declare ML Module "{FINDLIB_NAME}".\n'
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
    _write_layout(folder, data, built.loading)
    _hashes[folder] = (built.sha256, built.loading)
    return folder


def _write_layout(folder: Path, data: bytes, loading: str) -> None:
    """The plugin file, its META (findlib) and `load.v` in `folder`, read-only."""
    path = plugin_file(folder, loading)
    if loading == "findlib":
        path.parent.mkdir(mode=0o700)
        (path.parent / "META").write_text(META)
        os.chmod(path.parent / "META", 0o400)
    path.write_bytes(data)
    os.chmod(path, 0o500)
    (folder / LOADER).write_text(declare_sentence(folder, loading), encoding="utf-8")
    os.chmod(folder / LOADER, 0o400)
    if loading == "findlib":
        os.chmod(path.parent, 0o500)


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


def _built(chain: Toolchain) -> BuiltPlugin:
    root = cache_path("coq-plugin")
    version = coq_version(chain)
    loading = api_of(version).loading
    base = f"{version}-{source_hash(version)}"
    name = base if chain.is_host else f"{chain.name}-{base}"  # roots may share a version
    distrust = cache_trusted(root)
    if distrust is not None:
        log.info("the Coq plugin is built for this process only: %s", distrust)
        work = Path(tempfile.mkdtemp(prefix=f"formalbench-pluginbuild-{os.getpid()}-"))
        _private.append(work)
        return BuiltPlugin(work, _build_in(chain, version, work), loading)
    target = root / name
    recorded = _read_marker(target)
    if recorded is not None:
        return BuiltPlugin(target, recorded, loading)
    for tool in ("coqpp", "ocamlfind"):
        chain.program(tool)  # ToolchainMissingError names it: the plugin is then left out
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    with open(root / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        recorded = _read_marker(target)
        if recorded is not None:
            return BuiltPlugin(target, recorded, loading)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            digest = _build_in(chain, version, work)
            for junk in work.iterdir():
                if junk.name == PLUGIN_FILE:
                    continue
                if junk.is_dir() and not junk.is_symlink():
                    shutil.rmtree(junk)
                else:
                    junk.unlink()
            (work / _DONE).write_text(
                json.dumps({"sha256": digest, "toolchain": chain.name}) + "\n", encoding="utf-8"
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
    return BuiltPlugin(target, digest, loading)


def _build_in(chain: Toolchain, version: str, work: Path) -> str:
    """Build the plugin in `work` with the toolchain's own coqpp and ocamlfind, and
    smoke-test it; the sha256 of the plugin file."""
    _, package = api(version)
    for path in sources(version):
        shutil.copyfile(path, work / path.name)
    _run(chain, [chain.program("coqpp"), GRAMMAR.name], work)
    _run(
        chain,
        [
            chain.program("ocamlfind"), "ocamlopt", "-shared", "-rectypes", "-thread",
            "-package", package, "-o", PLUGIN_FILE,
            *(p.name for p in modules(version)), GRAMMAR.with_suffix(".ml").name,
        ],
        work,
    )  # fmt: skip
    digest = sha256_file(work / PLUGIN_FILE)
    _smoke_test(chain, version, work)
    return digest


def _run(chain: Toolchain, argv: list[str], work: Path) -> str:
    try:
        done = chain.run(argv, cwd=work, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"`{Path(argv[0]).name}` took over {exc.timeout:.0f}s") from exc
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split())[:300]
        raise BackendError(f"`{Path(argv[0]).name} {argv[1]}` failed: {said}")
    return done.stdout


def _smoke_test(chain: Toolchain, version: str, work: Path) -> None:
    """The built plugin must load in the toolchain's coqtop (as it will be loaded: by
    absolute path, or from a findlib folder given first) and answer like `Print
    Assumptions`: `eq_sym` rests on nothing, `NNPP` on `classic`."""
    chosen = api_of(version)
    smoke = work / "smoke"
    smoke.mkdir()
    _write_layout(smoke, (work / PLUGIN_FILE).read_bytes(), chosen.loading)
    text = (
        f"{declare_sentence(smoke.resolve(), chosen.loading)}{chosen.smoke_require}\n{FREEZE}\n"
        f"{QUERY_VERB} {chosen.smoke_closed}.\n{QUERY_VERB} {chosen.smoke_axiom}.\n"
    )
    path = chain.program("coqtop")
    argv = [path, *(["-I", str(smoke.resolve())] if chosen.loading == "findlib" else []), "-q"]
    try:
        done = chain.run(argv, cwd=work, timeout=BUILD_TIMEOUT, input=text)
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"coqtop with the plugin took over {exc.timeout:.0f}s") from exc
    finally:
        for sub in (smoke, smoke / FINDLIB_PACKAGE):
            if sub.is_dir():
                os.chmod(sub, 0o700)
    out = done.stdout + done.stderr
    closed = "Closed under the global context" in out
    if done.returncode != 0 or "Error" in out or not closed or "Axioms:" not in out:
        raise BackendError(f"the plugin does not answer in {path}: {out.strip()[-300:]!r}")
