"""What an APE answer says, before DiffRepair places anything (issue 23 item 3, issue 21 item 8).

One extraction for `ape apply` and `ape eval`: the patch is taken out of a model reply (a
```diff fence with prose around it, search/replace blocks, an unfenced diff after a line of
prose, or a whole file). A diff is cut into per-file sections by its headers (`diff --git`,
or a `---`/`+++` pair followed by a hunk), so the next file's headers are never read as
lines of the last hunk; each section names its file, and only the sections for the task's
file are applied (the same file under another folder prefix is the same file: a header's
path and the task's path agree when one is a suffix of the other, component by component).
A git binary patch, a mode-only change or a deletion carries no text to apply; a whole-file
answer must read as the file's language, never as a diff.

One path rule for every spelling (issue 29 item 7): a header path is first decoded as git
writes it (`"a/\\056\\056/F.v"`: C quoting with octal bytes, in `diff --git` lines as in
`---`/`+++`, `rename from` and `copy from`), then split into components (`/` or `\\`, empty
and `.` components dropped); a path with a `..` component never names the task's file,
however it was spelled. Every path a section names must be the task's file (or
`/dev/null`): a section whose `diff --git` line and `---`/`+++` pair disagree is refused, not
matched on its friendliest name. A section that changes the file's mode, makes it a symlink
or a submodule (mode 120000, 160000), renames or copies it, is refused: its text would be
written as a plain file that git would not write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEARCH_BLOCK = re.compile(
    r"^<{5,}\s*SEARCH[^\n]*\n(.*?)^={5,}[^\n]*\n(.*?)^>{5,}\s*REPLACE[^\n]*$",
    re.MULTILINE | re.DOTALL,
)
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
HUNK_HEADER = re.compile(r"^@@+\s*(?:-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?)?.*?(?:@@+|$)")
MAX_ANSWER_CHARS = 16 * 1024 * 1024  # larger answers are refused before anything is parsed

_META = (
    "index ",
    "old mode",
    "new mode",
    "new file mode",
    "deleted file mode",
    "similarity index",
    "dissimilarity index",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
)
_DIFF_MARKERS = re.compile(
    r"^(diff --git |GIT binary patch|Binary files .* differ$|old mode \d|new mode \d"
    r"|index [0-9a-f]+\.\.[0-9a-f]+|@@ -\d+(,\d+)? \+\d+(,\d+)? @@|\+\+\+ \S|--- \S.*\n\+\+\+ )",
    re.MULTILINE,
)
_LANGUAGE_WORDS = {
    "coq": re.compile(
        r"\b(Require|Import|From|Lemma|Theorem|Definition|Fixpoint|Inductive|Record|Section"
        r"|Module|Proof|Qed|Defined|Notation|Ltac|Example|Fact|Corollary|Proposition|Class"
        r"|Instance|Variable|Hypothesis|Let|Open|Arguments|Hint|Context|Program|Remark"
        r"|CoInductive|CoFixpoint|Structure|Canonical|Coercion|Scheme|Set|Check|Axiom"
        r"|Parameter|Declare)\b"
    ),
    "lean": re.compile(
        r"\b(import|theorem|lemma|def|namespace|section|open|variable|example|structure"
        r"|inductive|instance|class|abbrev|end|noncomputable|universe|set_option)\b"
    ),
}


def language_of(path: str | None) -> str | None:
    if path and path.endswith(".v"):
        return "coq"
    if path and path.endswith(".lean"):
        return "lean"
    return None


def looks_like_diff(text: str) -> bool:
    """True when `text` is a unified diff (with or without headers and @@ lines)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    if any(ln.startswith("@@") and HUNK_HEADER.match(ln) for ln in lines):
        return True
    if any(ln.startswith("diff --git ") for ln in lines):
        return True
    body = [ln for ln in lines if not ln.startswith(("--- ", "+++ ", "diff ", "index "))]
    changed = [ln for ln in body if ln[0] in "+-"]
    return bool(changed) and all(ln[0] in " +-\\" for ln in body)


def has_diff_markers(text: str) -> bool:
    """A diff's own lines (git headers, a binary patch, a mode change, a hunk header)."""
    return _DIFF_MARKERS.search(text) is not None


def reads_as(text: str, language: str | None) -> bool:
    """Whether a whole-file answer reads as a file of `language` (any when unknown)."""
    words = _LANGUAGE_WORDS.get(language or "")
    return words is None or words.search(text) is not None


def extract_answer(reply: str) -> str:
    """The edit in a model reply: the first ```diff block, else search/replace blocks, else
    the first fenced block that is a diff, else the last fenced block (a whole file), else an
    unfenced diff with the prose around it cut off, else the reply itself."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in FENCE.finditer(reply)]
    for lang, body in blocks:
        if lang in ("diff", "patch", "udiff"):
            return body
    if SEARCH_BLOCK.search(reply):
        return reply
    for _, body in blocks:
        if looks_like_diff(body):
            return body
    if blocks:
        return blocks[-1][1]
    return _unfenced_diff(reply)


def _unfenced_diff(reply: str) -> str:
    """A diff written without a fence: from its first header line to its last diff line
    (prose before and after is not part of it); the reply unchanged when it has no header."""
    lines = reply.split("\n")
    start = next(
        (
            k
            for k, ln in enumerate(lines)
            if ln.startswith(("diff --git ", "@@"))
            or (ln.startswith("--- ") and k + 1 < len(lines) and lines[k + 1].startswith("+++ "))
        ),
        None,
    )
    if start is None:
        return reply
    body = lines[start:]
    end = len(body)
    while end > 0 and not body[end - 1].startswith((" ", "+", "-", "@", "\\")):
        end -= 1
    return "\n".join(body[:end]) + "\n"


@dataclass
class Section:
    """The part of a diff about one file."""

    old: str | None = None  # the header's paths, prefixes `a/`/`b/` kept; None: /dev/null
    new: str | None = None
    named: bool = False  # whether a header named the file at all
    lines: list[str] = field(default_factory=list)
    binary: bool = False
    meta: list[str] = field(default_factory=list)  # git's mode/rename/index lines
    names: list[str] = field(default_factory=list)  # every path its headers name, decoded

    @property
    def path(self) -> str | None:
        return self.new if self.new is not None else self.old

    def has_hunks(self) -> bool:
        return any(ln.startswith(("@@", "+", "-", " ")) for ln in self.lines)


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> tuple[str, str]:
    """A C-quoted path at the start of `text` (git's spelling of unusual names: `"\\056"` is
    `.`), decoded as UTF-8 bytes, and the rest of `text` after its closing quote."""
    out = bytearray()
    i = 1
    while i < len(text) and text[i] != '"':
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            digits = len(text[i + 1 : i + 4]) - len(text[i + 1 : i + 4].lstrip("01234567"))
            if digits:
                out.append(int(text[i + 1 : i + 1 + digits], 8) & 0xFF)
                i += 1 + digits
                continue
            out.append(_C_ESCAPES.get(nxt, ord(nxt) if ord(nxt) < 128 else 63))
            i += 2
            continue
        out += ch.encode("utf-8", "surrogatepass")
        i += 1
    return out.decode("utf-8", "replace"), text[i + 1 :]


def _header_path(raw: str) -> str | None:
    raw = raw.strip()
    if raw.startswith('"'):
        path, _ = _unquote(raw)
    else:
        path = raw.split("\t", 1)[0].strip()
    return None if path == "/dev/null" else path


def _git_paths(line: str) -> tuple[str | None, str | None]:
    rest = line[len("diff --git ") :].strip()
    if rest.startswith('"'):
        old, rest = _unquote(rest)
        return old, _header_path(rest)
    quoted = rest.find(' "')
    if quoted >= 0 and rest.endswith('"'):
        return rest[:quoted], _header_path(rest[quoted + 1 :])
    cut = rest.rfind(" b/")
    if cut < 0:
        parts = rest.split(" ")
        return (parts[0], parts[-1]) if len(parts) == 2 else (rest, rest)
    return rest[:cut], rest[cut + 1 :]


_PATH_META = ("rename from ", "rename to ", "copy from ", "copy to ")
_REGULAR_MODES = ("100644", "100755")


def file_sections(text: str) -> list[Section]:
    """The diff cut at its file headers. Text before any header is one unnamed section."""
    lines = text.split("\n")
    sections: list[Section] = []
    cur: Section | None = None
    owed = [0, 0]  # old and new lines the last hunk header still announces
    k = 0
    while k < len(lines):
        ln = lines[k].removesuffix("\r")
        inside = owed[0] > 0 and owed[1] > 0  # `---`/`+++` here are a removed and an added line
        if ln.startswith("@@"):
            m = HUNK_HEADER.match(ln)
            owed = [int(m.group(2) or 1), int(m.group(4) or 1)] if m and m.group(1) else [0, 0]
        elif ln[:1] in (" ", "-", "+"):
            owed = [owed[0] - (ln[0] != "+"), owed[1] - (ln[0] != "-")]
        if ln.startswith("diff --git "):
            old, new = _git_paths(ln)
            cur = Section(old, new, named=True)
            cur.names += [p for p in (old, new) if p is not None]
            sections.append(cur)
            owed = [0, 0]
        elif not inside and _is_header_pair(lines, k, cur):
            owed = [0, 0]
            old, new = _header_path(ln[4:]), _header_path(lines[k + 1][4:])
            if cur is None or cur.lines or not cur.named:
                cur = Section(named=True)
                sections.append(cur)
            cur.old, cur.new = old, new
            cur.names += [p for p in (old, new) if p is not None]
            k += 1
        elif cur is not None and cur.named and not cur.lines and ln.startswith(_META):
            cur.meta.append(ln)
            if ln.startswith(_PATH_META):
                named = _header_path(ln.split(" ", 2)[2])
                cur.names += [named] if named is not None else []
        elif ln.startswith(("GIT binary patch", "Binary files ")):
            if cur is None:
                cur = Section()
                sections.append(cur)
            cur.binary = True
        else:
            if cur is None:
                cur = Section()
                sections.append(cur)
            if not (cur.binary and not ln.startswith("@@")):
                cur.lines.append(ln)
        k += 1
    return sections


def _is_header_pair(lines: list[str], k: int, cur: Section | None) -> bool:
    """`--- X` then `+++ Y` at the start of the text or of a `diff --git` section, or
    followed by a hunk header: a removed line `-- x` then an added `++ y` inside a hunk is
    not a header."""
    if not (lines[k].startswith("--- ") and k + 1 < len(lines)):
        return False
    if not lines[k + 1].startswith("+++ "):
        return False
    after = lines[k + 2].removesuffix("\r") if k + 2 < len(lines) else ""
    fresh = cur is None or cur.named and not cur.lines  # nothing read yet, or a git header
    return fresh or after.startswith("@@") or not after.strip() and k + 3 >= len(lines)


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]


def _mode_problem(section: Section) -> str | None:
    """Why a section's git lines forbid writing its text as the task's plain file."""
    for line in section.meta:
        words = line.split()
        if line.startswith(("old mode", "new mode")):
            return f"the diff changes the file's mode ({line.strip()})"
        if line.startswith(_PATH_META):
            return f"the diff renames or copies the file ({line.strip()})"
        mode = words[-1] if line.startswith(("new file mode", "deleted file mode")) else None
        if line.startswith("index ") and len(words) == 3:
            mode = words[2]
        if mode is not None and mode not in _REGULAR_MODES:
            kind = {"120000": "a symlink", "160000": "a submodule"}.get(mode, f"mode {mode}")
            return f"the diff makes the file {kind} ({line.strip()})"
    return None


def same_file(header: str, task: str) -> bool:
    """Whether a diff header names the task's file: one path is a suffix of the other,
    component by component, with or without git's `a/`/`b/` prefix; `..` never matches."""
    want = _parts(task)
    if ".." in want:  # a relative path from elsewhere: only what follows the last `..`
        want = want[len(want) - want[::-1].index("..") :]
    if not want:
        return False
    candidates = [_parts(header)]
    if candidates[0][:1] in (["a"], ["b"]):
        candidates.append(candidates[0][1:])
    for got in candidates:
        if not got or ".." in got:
            continue
        n = min(len(got), len(want))
        if got[-n:] == want[-n:]:
            return True
    return False


@dataclass
class Selection:
    """The lines of the sections for the task's file, and why anything else was left out."""

    text: str
    refused: list[str] = field(default_factory=list)  # sections for other files
    problem: str | None = None  # why nothing can be applied


def select_sections(answer: str, path: str | None) -> Selection:
    """Keep the sections for `path` (all unnamed ones; every section when `path` is None and
    the diff names at most one file)."""
    sections = file_sections(answer)
    named = {s.path for s in sections if s.named}
    keep: list[Section] = []
    refused: list[str] = []
    for s in sections:
        climbing = next((n for n in s.names if ".." in _parts(n)), None)
        if not s.named:
            keep.append(s)
        elif path is None:
            if len(named) > 1:
                return Selection("", problem=f"the diff changes {len(named)} files: {_few(named)}")
            if climbing is not None:
                return Selection("", problem=f"the diff names a path with `..`: {climbing!r}")
            keep.append(s)
        elif s.names and all(same_file(n, path) for n in s.names):
            keep.append(s)
        elif any(same_file(n, path) for n in s.names):
            others = sorted({n for n in s.names if not same_file(n, path)})
            return Selection(
                "", refused, f"the headers of the section for {path} also name {_few(set(others))}"
            )
        else:
            refused.append(f"section for {s.path or s.old!r} refused: not the task's file {path}")
    for s in keep:
        problem = _mode_problem(s)
        if problem is not None:
            return Selection("", refused, problem)
        if s.named and s.new is None:
            return Selection("", refused, f"the diff deletes {s.old}")
        if s.binary:
            return Selection("", refused, f"{s.path or 'the file'}: a git binary patch has no text")
    if not keep:
        return Selection("", refused, "the diff changes only other files: " + _few(named))
    if not any(s.has_hunks() for s in keep):
        what = "a mode change only" if any(s.meta for s in keep) else "no hunk"
        return Selection("", refused, f"the diff for the task's file has {what}")
    return Selection("\n".join(ln for s in keep for ln in s.lines), refused)


def _few(names: set[str | None]) -> str:
    shown = sorted(n or "/dev/null" for n in names)
    return ", ".join(shown[:3]) + (" ..." if len(shown) > 3 else "")
