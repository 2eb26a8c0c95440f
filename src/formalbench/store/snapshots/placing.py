"""Putting one restored file in place: hard link, reflink (copy-on-write clone) or copy.

Reflink is tried with the FICLONE ioctl (btrfs, XFS, bcachefs...) and then
`os.copy_file_range`, which clones on filesystems that support it and copies in the kernel
elsewhere. A hard link that hits the link limit (EMLINK) or crosses devices (EXDEV) falls
back to a copy of that file; the caller counts what really happened.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path

FICLONE = 0x40049409  # _IOW(0x94, 9, int) from linux/fs.h

LINKED, REFLINKED, COPIED = "linked", "reflinked", "copied"


def clone(src: Path | str, dst: Path | str) -> bool:
    """Reflink `src` to the new file `dst`; False (and no `dst`) where unsupported."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
            return True
        except OSError:
            pass
    os.unlink(dst)
    return False


def kernel_copy(src: Path | str, dst: Path | str) -> None:
    """Copy with copy_file_range (a clone where the filesystem offers one), else shutil."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        remaining = os.fstat(fin.fileno()).st_size
        try:
            while remaining > 0:
                done = os.copy_file_range(fin.fileno(), fout.fileno(), remaining)
                if done == 0:
                    break
                remaining -= done
            return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        fin.seek(0)
        fout.seek(0)
        fout.truncate()
        shutil.copyfileobj(fin, fout)


def reflink_supported(folder: Path) -> bool:
    """Whether FICLONE works inside `folder` (probed with two scratch files)."""
    src, dst = folder / ".reflink-probe", folder / ".reflink-probe.clone"
    try:
        src.write_bytes(b"probe")
        return clone(src, dst)
    except OSError:
        return False
    finally:
        for p in (src, dst):
            if p.exists():
                p.unlink()


def link(src: str, dst: str) -> str:
    """Hard-link, falling back to a copy on EMLINK/EXDEV. Returns how it was placed."""
    try:
        os.link(src, dst)
        return LINKED
    except OSError as exc:
        if exc.errno not in (errno.EMLINK, errno.EXDEV, errno.EPERM):
            raise
    kernel_copy(src, dst)
    return COPIED
