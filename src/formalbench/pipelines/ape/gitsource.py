"""A git history as the miner reads it: commits, file changes with renames, file contents.

Everything goes through the `git` CLI (a bundle is cloned once, bare, into the run folder);
contents come from one long-lived `git cat-file --batch` process instead of a process per
file, which is what makes walking a thousand commits take seconds.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from formalbench.core.errors import InputError

SEP, END = "\x1f", "\x1e"


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    date: str  # ISO 8601 author date
    author: str
    message: str


@dataclass(frozen=True)
class Change:
    status: str  # created / modified / deleted / renamed / copied
    path_before: str | None
    path_after: str | None


_STATUS = {"A": "created", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied"}


class GitRepo:
    """A repository (working copy or bare clone) read through the git CLI."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._batch: subprocess.Popen[bytes] | None = None

    @classmethod
    def open(cls, source: str | Path, workdir: Path) -> GitRepo:
        """`source` is a repository folder or a bundle; a bundle is cloned into `workdir`."""
        src = Path(source)
        if not src.exists():
            raise InputError(f"{src}: no such repository or bundle")
        if src.is_file():
            with src.open("rb") as handle:
                head = handle.read(16)
            if head not in (b"# v2 git bundle\n", b"# v3 git bundle\n"):
                raise InputError(
                    f"{src}: not a git bundle (no `# v2/v3 git bundle` header); give a bundle "
                    "or a repository folder"
                )
            dest = workdir / "repo.git"
            if not (dest / "HEAD").exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                run = subprocess.run(
                    ["git", "clone", "-q", "--bare", str(src), str(dest)],
                    capture_output=True,
                    text=True,
                )
                if run.returncode != 0:
                    why = next(
                        (ln for ln in run.stderr.splitlines() if ln.startswith(("fatal", "error"))),
                        "git clone failed",
                    )
                    raise InputError(f"{src}: cannot read the git bundle ({why.strip()})")
            return cls(dest)
        probe = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--git-dir"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            raise InputError(f"{src}: not a git repository")
        return cls(src)

    def git(self, *args: str) -> str:
        run = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True)
        if run.returncode != 0:
            raise InputError(f"{self.path}: git {args[0]} failed: {run.stderr.strip()[:200]}")
        return run.stdout

    def commits(self, since: str | None = None) -> list[Commit]:
        """Non-merge commits reachable from HEAD, newest first."""
        args = ["log", "--no-merges", f"--format=%H{SEP}%P{SEP}%aI{SEP}%an{SEP}%B{END}"]
        if since:
            args.append(f"--since={since}")
        out = []
        for rec in self.git(*args, "HEAD").split(END):
            rec = rec.strip("\n")
            if not rec:
                continue
            sha, parents, date, author, message = rec.split(SEP, 4)
            out.append(Commit(sha, tuple(parents.split()), date, author, message.strip()))
        return out

    def changes(self, parent: str, sha: str) -> list[Change]:
        """File-level changes of `sha` against `parent`, renames detected (-M)."""
        fields = self.git("diff", "--name-status", "-M", "-z", parent, sha).split("\0")
        out, k = [], 0
        while k < len(fields) and fields[k]:
            code = fields[k][0]
            if code in "RC":
                out.append(Change(_STATUS[code], fields[k + 1], fields[k + 2]))
                k += 3
                continue
            path = fields[k + 1]
            status = _STATUS.get(code, "modified")
            out.append(
                Change(
                    status,
                    None if status == "created" else path,
                    None if status == "deleted" else path,
                )
            )
            k += 2
        return out

    def show(self, rev: str, path: str) -> str | None:
        """The text of `path` at `rev`, or None when it does not exist there."""
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "-C", str(self.path), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert self._batch.stdin and self._batch.stdout
        self._batch.stdin.write(f"{rev}:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().decode().split()
        if len(header) < 3 or header[1] == "missing":
            return None
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        if header[1] != "blob":
            return None
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin:
                self._batch.stdin.close()
            self._batch.wait(timeout=10)
            self._batch = None
