"""Opening a textbook: a folder, or a `.tar.gz`/`.tgz`/`.zip` archive of one, and its files.

Every problem with the input (missing, not an archive, no sources, bytes that are not text)
is an `InputError` naming the path, so the CLI prints one line instead of a traceback.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

from formalbench.core.errors import InputError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


def is_archive_name(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@contextmanager
def open_source(source: Path) -> Iterator[Path]:
    """Yield a folder holding the textbook: `source` itself, or an archive unpacked to a temp dir."""
    if not source.exists():
        raise InputError(f"{source}: no such file or folder")
    if source.is_dir():
        yield source
        return
    if not is_archive_name(source):
        raise InputError(f"{source}: not a folder nor a .tar.gz/.tgz/.zip archive of a textbook")
    with TemporaryDirectory(prefix="formalbench-textbook-") as tmp:
        _unpack(source, Path(tmp))
        yield Path(tmp)


def _unpack(archive: Path, into: Path) -> None:
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    target = (into / member).resolve()
                    if not target.is_relative_to(into.resolve()):
                        raise InputError(f"{archive}: member {member!r} points outside the archive")
                zf.extractall(into)
        else:
            with tarfile.open(archive, "r:gz") as tf:
                tf.extractall(into, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise InputError(f"{archive}: not a readable archive ({exc})") from exc


def read_text(path: Path, root: Path) -> str:
    """The text of one source file; bytes that are not UTF-8 (or Latin-1 marked) are an error."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        raise InputError(
            f"{rel}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from exc


def find_files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Source files under `root` with one of `suffixes`, in natural order (2 before 10)."""
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in suffixes]
    return sorted(files, key=lambda p: natural_key(p.relative_to(root).as_posix()))


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders embedded numbers by value: `ch2` before `ch10`."""
    parts: list[tuple[int, int | str]] = []
    num = ""
    word = ""
    for ch in text:
        if ch.isdigit():
            if word:
                parts.append((1, word))
                word = ""
            num += ch
        else:
            if num:
                parts.append((0, int(num)))
                num = ""
            word += ch.lower()
    if num:
        parts.append((0, int(num)))
    if word:
        parts.append((1, word))
    return parts
