"""Which Coq a repository was made for, at a revision, as its own files declare it.

A history written for Coq 8.11 fails on Rocq 9.2 for reasons that are not the commit's
fault (renamed lemmas, `From Coq` deprecated, tactics changed). Validation reads the
declared range so that such failures are reported as "made for Coq X (running Y)", not as
breakage. Two sources, read (never run) from the tree at the revision:

- the opam files at the root (`*.opam`, `opam`): the constraint on the package `coq`
  (or `coq-core`, `rocq-core`, `rocq-prover`) in `depends`, an opam formula such as
  `{(>= "8.7" & < "8.15~") | (= "dev")}`; coq-community's `meta.yml`
  (`supported_coq_versions: opam: '{…}'`) when there is no opam file;
- else the CI files (`.github/workflows/*.yml`, `.gitlab-ci.yml`, `.travis.yml`,
  `meta.yml`'s tested versions, Dockerfiles): the Coq versions they name (docker images
  `coqorg/coq:8.13`, `COQ=8.12`, `coq_version: 8.14`, `nix-action-8.15.yml`).

`= "dev"` names the development Coq of the commit's day, which no released version is: it
is left out of the range (a formula of `dev` alone declares nothing we can compare).
Versions compare as opam compares them (Debian's rule: `~` before the end, so `8.15~` is
below `8.15`). No library for opam formulas exists on PyPI; the grammar read here is the
part that version constraints use (`& | ! ( )`, the six relations, filter variables such
as `build` taken as true).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PACKAGES = ("coq", "coq-core", "rocq-core", "rocq-prover")
_DEPENDS = re.compile(r"^\s*depends\s*:\s*\[", re.M)
_DEPEND = re.compile(r'"(?:' + "|".join(PACKAGES) + r')"\s*(\{[^}]*\})?')
_META_OPAM = re.compile(
    r"supported_coq_versions:[^\n]*\n(?:[ \t]+[^\n]*\n)*?[ \t]+opam:\s*'([^']*)'"
)
_CI_VERSIONS = (
    re.compile(r"coqorg/coq:(\d+\.\d+)"),
    re.compile(r"\bCOQ(?:_VERSION)?\s*[=:]\s*['\"]?(\d+\.\d+)"),
    re.compile(r"coq[-_]version(?:[-_]or[-_]url)?['\"]?\s*[:=]\s*['\"]?(\d+\.\d+)", re.I),
)
_META_TESTED = re.compile(r"^\s*-\s*version(?:_or_url)?:\s*['\"]?(\d+\.\d+)", re.M)
_NIX_ACTION = re.compile(r"nix-action-(\d+\.\d+)\.ya?ml$")
CI_FILES = re.compile(
    r"^(\.travis\.ya?ml|\.gitlab-ci\.ya?ml|\.github/workflows/[^/]+\.ya?ml|meta\.ya?ml|"
    r"Dockerfile[^/]*|\.circleci/config\.ya?ml)$"
)


# --- opam's version order ----------------------------------------------------------------
def _char_order(c: str) -> int:
    if c == "~":
        return -1
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _compare_text(a: str, b: str) -> int:
    for i in range(max(len(a), len(b))):
        x = _char_order(a[i]) if i < len(a) else 0
        y = _char_order(b[i]) if i < len(b) else 0
        if x != y:
            return -1 if x < y else 1
    return 0


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as opam orders `a` and `b` (`8.15~` < `8.15` < `8.15.0` < `8.16`)."""
    pa = re.findall(r"(\D*)(\d*)", a)
    pb = re.findall(r"(\D*)(\d*)", b)
    for i in range(max(len(pa), len(pb))):
        ta, na = pa[i] if i < len(pa) else ("", "")
        tb, nb = pb[i] if i < len(pb) else ("", "")
        order = _compare_text(ta, tb)
        if order:
            return order
        x, y = int(na or 0), int(nb or 0)
        if x != y:
            return -1 if x < y else 1
    return 0


# --- opam formulas -------------------------------------------------------------------------
_TOKEN = re.compile(r'\s*(?:(>=|<=|!=|=|<|>)|(&|\||!|\(|\))|"([^"]*)"|([A-Za-z_][\w:+-]*))')
Node = tuple[
    Any, ...
]  # ("rel", op, version) | ("and", a, b) | ("or", a, b) | ("not", a) | ("true",)


class FormulaError(ValueError):
    """Text that is not an opam version formula."""


MAX_FORMULA = 400  # characters; real constraints are under 100 (the text is a repository's)


def parse_formula(text: str) -> Node:
    """The opam formula inside `{…}` (braces optional) as a small tree; `FormulaError` for
    anything else, a formula longer than `MAX_FORMULA` included (its nesting would be
    bounded only by Python's recursion limit)."""
    text = text.strip()
    if len(text) > MAX_FORMULA:
        raise FormulaError(f"a formula of {len(text)} characters")
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise FormulaError(f"cannot read {text[pos : pos + 20]!r}")
        pos = m.end()
        if m.group(1):
            tokens.append(("rel", m.group(1)))
        elif m.group(2):
            tokens.append(("op", m.group(2)))
        elif m.group(3) is not None:
            tokens.append(("str", m.group(3)))
        else:
            tokens.append(("var", m.group(4)))
    at = 0

    def peek() -> tuple[str, str] | None:
        return tokens[at] if at < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal at
        if at >= len(tokens):
            raise FormulaError("the formula ends early")
        at += 1
        return tokens[at - 1]

    def disjunction() -> Node:
        node = conjunction()
        while peek() == ("op", "|"):
            take()
            node = ("or", node, conjunction())
        return node

    def conjunction() -> Node:
        node = atom()
        while peek() == ("op", "&"):
            take()
            node = ("and", node, atom())
        return node

    def atom() -> Node:
        kind, value = take()
        if (kind, value) == ("op", "("):
            node = disjunction()
            if take() != ("op", ")"):
                raise FormulaError("a parenthesis is not closed")
            return node
        if (kind, value) == ("op", "!"):
            return ("not", atom())
        if kind == "rel":
            what, version = take()
            if what != "str":
                raise FormulaError(f"{value} is not followed by a version")
            return ("rel", value, version)
        if kind in ("var", "str"):  # a filter variable (`build`, `with-test`): no constraint
            return ("true",)
        raise FormulaError(f"unexpected {value!r}")

    if not tokens:
        return ("true",)
    tree = disjunction()
    if at != len(tokens):
        raise FormulaError(f"unexpected {tokens[at][1]!r}")
    return tree


_RELATIONS: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}


def _is_dev(node: Node) -> bool:
    return node[0] == "rel" and node[2] == "dev"


def without_dev(node: Node) -> Node | None:
    """The formula with its `dev` relations left out (None: nothing else is left)."""
    if _is_dev(node):
        return None
    if node[0] in ("and", "or"):
        a, b = without_dev(node[1]), without_dev(node[2])
        if a is None or b is None:
            return a if b is None else b
        return (node[0], a, b)
    if node[0] == "not":
        inner = without_dev(node[1])
        return None if inner is None else ("not", inner)
    return node


def satisfies(node: Node, version: str) -> bool:
    kind = node[0]
    if kind == "rel":
        return _RELATIONS[node[1]](compare_versions(version, node[2]))
    if kind == "and":
        return satisfies(node[1], version) and satisfies(node[2], version)
    if kind == "or":
        return satisfies(node[1], version) or satisfies(node[2], version)
    if kind == "not":
        return not satisfies(node[1], version)
    return True


def render(node: Node, parent: str | None = None) -> str:
    """`>= 8.7 & < 8.15~`: the formula as a reader says it, quotes and braces gone; a
    conjunction inside a disjunction (or the reverse) in parentheses."""
    kind = node[0]
    if kind == "rel":
        return f"{node[1]} {node[2]}"
    if kind == "not":
        return f"!({render(node[1])})"
    if kind in ("and", "or"):
        sign = "&" if kind == "and" else "|"
        text = f"{render(node[1], kind)} {sign} {render(node[2], kind)}"
        return text if parent in (None, kind) else f"({text})"
    return "any"


# --- a repository at a revision --------------------------------------------------------------
@dataclass
class Declared:
    """The Coq versions a revision declares: an opam formula (`formula`, read from
    `source`) or the versions its CI names (`ci`); `range` says it in words."""

    source: str
    formula: str | None = None
    ci: tuple[str, ...] = ()

    @property
    def range(self) -> str:
        if self.formula is not None:
            node = without_dev(parse_formula(self.formula))
            return "dev" if node is None else render(node)
        if len(self.ci) == 1:
            return self.ci[0]
        return f"{self.ci[0]} to {self.ci[-1]}"

    def fits(self, version: str) -> bool | None:
        """Whether `version` is in the declared range; None where it declares nothing
        comparable (`dev` alone, an unreadable formula)."""
        if self.formula is not None:
            try:
                node = without_dev(parse_formula(self.formula))
            except FormulaError:
                return None
            return None if node is None else satisfies(node, version)
        if not self.ci:
            return None
        major_minor = ".".join(version.split(".")[:2])
        low, high = self.ci[0], self.ci[-1]
        return compare_versions(low, major_minor) <= 0 <= compare_versions(high, major_minor)

    def as_dict(self, version: str) -> dict[str, Any]:
        return {
            "declared": self.range,
            "source": self.source,
            "running": version,
            "fits": self.fits(version),
        }


def opam_formula(text: str) -> str | None:
    """The Coq constraint of an opam file's `depends` (`{}` when Coq is named bare);
    None when the file does not name Coq there."""
    head = _DEPENDS.search(text)
    if head is None:
        return None
    end = text.find("]", head.end())  # opam's list holds no brackets of its own
    found = _DEPEND.search(text, head.end(), end if end >= 0 else len(text))
    if found is None:
        return None
    return found.group(1) or "{}"


def declared(files: list[str], read: Callable[[str], str | None]) -> Declared | None:
    """What the tree whose file names are `files` (repository-relative) declares; `read`
    gives a file's text. None when nothing names a Coq version."""
    for name in sorted(f for f in files if "/" not in f and (f == "opam" or f.endswith(".opam"))):
        formula = opam_formula(read(name) or "")
        if formula is not None and formula != "{}" and _readable(formula):
            return Declared(source=name, formula=formula)
    for name in ("meta.yml", "meta.yaml"):
        m = _META_OPAM.search(read(name) or "") if name in files else None
        if m and _readable(m.group(1)):
            return Declared(source=f"{name} supported_coq_versions", formula=m.group(1))
    versions: set[str] = set()
    sources: list[str] = []
    for name in sorted(f for f in files if CI_FILES.match(f)):
        text = read(name) or ""
        found = {v for rx in _CI_VERSIONS for v in rx.findall(text)}
        if name.startswith("meta."):
            found |= set(_META_TESTED.findall(text))
        nix = _NIX_ACTION.search(name)
        if nix:
            found.add(nix.group(1))
        if found:
            versions |= found
            sources.append(name)
    if not versions:
        return None
    ordered = sorted(versions, key=_sort_key)
    return Declared(source=", ".join(sources), ci=tuple(ordered))


def _readable(formula: str) -> bool:
    try:
        parse_formula(formula)
    except FormulaError:
        return False
    return True


def _sort_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def declared_at(repo: Any, rev: str) -> Declared | None:
    """`declared` of a `GitRepo` at `rev` (files read with `git show`)."""
    listing = repo.git("ls-tree", "-r", "--name-only", rev).splitlines()
    wanted = [
        f
        for f in listing
        if ("/" not in f and (f == "opam" or f.endswith(".opam"))) or CI_FILES.match(f)
    ]
    return declared(wanted, lambda name: repo.show(rev, name))


def made_for(info: dict[str, Any]) -> str:
    """The reason of a task whose commit declares a range the running Coq is outside."""
    return f"made for Coq {info['declared']} (running {info['running']})"
