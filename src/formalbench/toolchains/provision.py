"""Install, list and remove toolchain roots in the user's cache, rootless.

Why `.deb` files unpacked with `dpkg-deb -x` and not debootstrap/mmdebstrap/apt in a chroot:
a root that only runs `coqc`/`coqtop`/`coqchk` and builds OCaml plugins needs the files of its
packages and nothing their maintainer scripts do (users, services, alternatives: Debian's
OCaml and Coq packages ship their files and links as plain files), so no root privileges, no
fakeroot and no resolver are needed on the user's machine; mmdebstrap is not installed here
and debootstrap needs root. The package set is resolved ahead of time and pinned
(`manifest.py`): the install is the same bytes on every machine, and a pin that left the
archive fails with one line instead of resolving to something else.

Steps, each shown as progress: download every pinned `.deb` into `<cache>/toolchains/
.downloads/` (kept on failure, so a re-run only fetches what is missing; each file verified
against its pinned SHA-256), unpack them into a temporary sibling folder, add the merged-/usr
links (`/bin`, `/lib`, `/lib64` -> `usr/...`) that the packages do not ship, run the smoke test
in it through bwrap (`coqc` compiles the manifest's files: the standard library and every
library of the stack must load), write `toolchain.json` (the exact versions, the Coq
version, install time and size), and only then rename it to `<cache>/toolchains/<name>`. A
folder without `toolchain.json` is never taken for an installed toolchain.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from formalbench.core.config import cache_path
from formalbench.core.errors import FormalbenchError, ToolchainMissingError
from formalbench.toolchains import manifest as manifests
from formalbench.toolchains.manifest import Manifest, PinnedPackage
from formalbench.toolchains.rootfs import ENV_IN_ROOT, MERGED_USR, bwrap_program, root_argv

RECORD = "toolchain.json"  # present only in a finished, smoke-tested root
SMOKE_TIMEOUT = 600.0
SMOKE_MEMORY_MB = 4096  # CoqBackend's default cap
DOWNLOAD_WORKERS = 4
MIRROR_VAR = "FORMALBENCH_DEBIAN_MIRROR"  # e.g. a snapshot.debian.org/archive/debian/<time>

#: (phase, done, total): phase is "download" (bytes), "extract" (packages) or "smoke" (files)
Progress = Callable[[str, int, int], None]


class ProvisionError(FormalbenchError):
    """An install that cannot go on, in one line (disk, archive, bwrap, smoke test)."""


def toolchains_dir() -> Path:
    return cache_path("toolchains")


def root_of(name: str) -> Path:
    return toolchains_dir() / name


def record_of(name: str) -> dict | None:
    """The installed toolchain's record, or None when `name` is not (completely) installed."""
    path = root_of(name) / RECORD
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def installed() -> list[str]:
    """Names of the installed toolchains (those with a record), sorted."""
    folder = toolchains_dir()
    if not folder.is_dir():
        return []
    return sorted(
        p.name for p in folder.iterdir() if not p.name.startswith(".") and record_of(p.name)
    )


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    folder = toolchains_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield


# --- checks before anything is fetched ------------------------------------------------------
def _preflight(manifest: Manifest, downloads: Path) -> None:
    if bwrap_program() is None:
        raise ProvisionError(
            "toolchains run through bubblewrap, and `bwrap` is missing or cannot create a "
            "user namespace here (install the `bubblewrap` package, or allow unprivileged "
            "user namespaces); use --toolchain host meanwhile"
        )
    if shutil.which("dpkg-deb") is None:
        raise ProvisionError("unpacking .deb files needs `dpkg-deb` (Debian's `dpkg` package)")
    missing = sum(p.size for p in manifest.packages if not (downloads / p.deb_name).is_file())
    need = missing + manifest.installed_bytes() + (64 << 20)
    free = shutil.disk_usage(downloads).free
    if free < need:
        raise ProvisionError(
            f"not enough disk space in {toolchains_dir()}: {manifest.name} needs about "
            f"{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free (set FORMALBENCH_CACHE "
            "to a folder on a larger disk)"
        )


# --- download -------------------------------------------------------------------------------
def _url(mirror: str, package: PinnedPackage) -> str:
    return f"{mirror.rstrip('/')}/{urllib.parse.quote(package.filename)}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fetch(mirror: str, package: PinnedPackage, dest: Path, step: Callable[[int], None]) -> None:
    """Download one pinned file to `dest` (via `.part`), verified; one-line errors."""
    url = _url(mirror, package)
    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as out:
            for block in iter(lambda: response.read(1 << 16), b""):
                out.write(block)
                digest.update(block)
                step(len(block))
    except urllib.error.HTTPError as exc:
        part.unlink(missing_ok=True)
        if exc.code in (404, 410):
            raise ProvisionError(
                f"{package.name} {package.version} is no longer in the package archive "
                f"({url}: {exc.code}); the pinned manifest is out of date: update formalbench, "
                f"or set {MIRROR_VAR} to a snapshot of the archive that still has it"
            ) from exc
        raise ProvisionError(f"the package archive answered {exc.code} for {url}") from exc
    except OSError as exc:
        part.unlink(missing_ok=True)
        if getattr(exc, "errno", None) == errno.ENOSPC:
            raise ProvisionError(f"no space left on the disk of {dest.parent}") from exc
        reason = getattr(exc, "reason", exc)
        raise ProvisionError(f"cannot reach the package archive at {mirror}: {reason}") from exc
    if digest.hexdigest() != package.sha256:
        part.unlink(missing_ok=True)
        raise ProvisionError(
            f"{url} is not the pinned file (SHA-256 differs): the mirror serves something "
            "else; refusing it"
        )
    os.replace(part, dest)


def _download(manifest: Manifest, downloads: Path, progress: Progress) -> None:
    mirror = os.environ.get(MIRROR_VAR, "").strip() or manifest.mirror
    total = manifest.download_bytes()
    done = 0
    todo = []
    for package in manifest.packages:
        dest = downloads / package.deb_name
        if dest.is_file() and dest.stat().st_size == package.size:
            if _sha256(dest) == package.sha256:  # a complete earlier download: resume past it
                done += package.size
                continue
            dest.unlink()
        todo.append(package)
    progress("download", done, total)

    def step(n: int) -> None:
        nonlocal done
        done += n  # one GIL-held integer add per block: a progress figure, not an invariant
        progress("download", done, total)

    with concurrent.futures.ThreadPoolExecutor(DOWNLOAD_WORKERS) as pool:
        jobs = [pool.submit(_fetch, mirror, p, downloads / p.deb_name, step) for p in todo]
        for job in concurrent.futures.as_completed(jobs):
            job.result()  # the first failure ends the install (the others finish or fail)
    progress("download", total, total)


# --- unpack and test ------------------------------------------------------------------------
def _extract(manifest: Manifest, downloads: Path, root: Path, progress: Progress) -> None:
    count = len(manifest.packages)
    for index, package in enumerate(manifest.packages):
        deb = downloads / package.deb_name
        done = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            if any("No space left" in line for line in said):
                raise ProvisionError(f"no space left on the disk of {root.parent}")
            raise ProvisionError(f"unpacking {deb.name} failed: {said[-1] if said else '?'}")
        progress("extract", index + 1, count)
    for link, target in MERGED_USR.items():  # what base-files would make: ELF interpreters
        path = root / link  # are /lib64/ld-linux-x86-64.so.2, scripts start with /bin/sh
        if not path.exists() and not path.is_symlink() and (root / target).is_dir():
            path.symlink_to(target)
    for mount_point in ("proc", "dev", "tmp"):
        (root / mount_point).mkdir(exist_ok=True)


def _in_root(root: Path, argv: list[str], work: Path, timeout: float) -> tuple[int, str]:
    cap = shutil.which("prlimit")  # as checks run: under the sandbox's address-space cap
    limit = [cap, f"--as={SMOKE_MEMORY_MB << 20}", "--"] if cap else []
    try:
        done = subprocess.run(
            [*limit, *root_argv(root, argv, work=work)],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**ENV_IN_ROOT, "LANG": "C.UTF-8"},
        )
    except ToolchainMissingError as exc:  # the root lacks the program
        return 127, str(exc)
    except subprocess.TimeoutExpired:
        return 124, f"`{' '.join(argv)}` took over {timeout:.0f}s"
    return done.returncode, (done.stdout + done.stderr).strip()


def _smoke(manifest: Manifest, root: Path, progress: Progress) -> str:
    """Compile the manifest's smoke files in the new root; the Coq version, or an error."""
    with tempfile.TemporaryDirectory(prefix="formalbench-smoke-") as folder:
        work = Path(folder)
        code, said = _in_root(root, ["coqc", "--print-version"], work, 60)
        if code != 0 or not said:
            raise ProvisionError(f"coqc does not start in the new root: {said[-300:]}")
        version = said.split()[0]
        total = len(manifest.smoke)
        progress("smoke", 0, total)
        for index, (name, text) in enumerate(sorted(manifest.smoke.items())):
            (work / name).write_text(text, encoding="utf-8")
            code, said = _in_root(root, ["coqc", "-q", "-w", "none", name], work, SMOKE_TIMEOUT)
            if code != 0:
                last = said.strip().splitlines()[-3:]
                raise ProvisionError(
                    f"the smoke test {name} does not compile in {manifest.name}: "
                    f"{' '.join(last)[-400:]}"
                )
            progress("smoke", index + 1, total)
    return version


def _folder_bytes(root: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


@dataclass
class Installed:
    name: str
    root: Path
    seconds: float
    bytes: int
    coq_version: str
    already: bool = False


def install(
    name: str,
    *,
    progress: Progress | None = None,
    force: bool = False,
    keep_downloads: bool = False,
) -> Installed:
    """Provision toolchain `name` (see the module doc); ProvisionError in one line."""
    manifest = manifests.load(name)
    report = progress or (lambda _phase, _done, _total: None)
    started = time.perf_counter()
    with _locked():
        target = root_of(name)
        record = record_of(name)
        if record is not None and not force:
            return Installed(name, target, 0.0, 0, record["coq_version"], already=True)
        for stale in toolchains_dir().glob(".[it][nr]*-*"):  # .install-/.trash- of a killed run
            shutil.rmtree(stale, ignore_errors=True)  # (we hold the lock: none is live)
        downloads = toolchains_dir() / ".downloads" / name
        downloads.mkdir(parents=True, exist_ok=True)
        _preflight(manifest, downloads)
        _download(manifest, downloads, report)
        work = Path(tempfile.mkdtemp(prefix=f".install-{name}-", dir=toolchains_dir()))
        try:
            _extract(manifest, downloads, work, report)
            version = _smoke(manifest, work, report)
            size = _folder_bytes(work)
            seconds = time.perf_counter() - started
            record = {
                "name": name,
                "coq_version": version,
                "packages": {p.name: p.version for p in manifest.packages},
                "libraries": {lib: manifest.version_of(lib) for lib in manifest.libraries},
                "manifest_generated": manifest.generated,
                "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "install_seconds": round(seconds, 1),
                "bytes": size,
            }
            (work / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            if target.exists() or target.is_symlink():
                _discard(target)
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if not keep_downloads:
            shutil.rmtree(downloads, ignore_errors=True)
    return Installed(name, target, seconds, size, version)


def _discard(folder: Path) -> None:
    """Remove a folder so that no reader sees it half-deleted: rename, then delete."""
    trash = folder.with_name(f".trash-{folder.name}-{os.getpid()}-{time.time_ns()}")
    os.rename(folder, trash)
    shutil.rmtree(trash, ignore_errors=True)


def remove(name: str) -> bool:
    """Delete an installed toolchain (and its leftover downloads); False if there was none."""
    with _locked():
        target = root_of(name)
        shutil.rmtree(toolchains_dir() / ".downloads" / name, ignore_errors=True)
        if not target.exists():
            return False
        _discard(target)
        return True
