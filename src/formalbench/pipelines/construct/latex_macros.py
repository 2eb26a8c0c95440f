"""Macros a textbook defines (`\\newcommand`, `\\renewcommand`, `\\providecommand`, `\\def`,
`\\DeclareMathOperator`) and their expansion in extracted text.

Expansion keeps the text LaTeX (formulas stay formulas): a call of a defined macro is
replaced by its body with the arguments substituted, then expanded again (a chain deeper
than `MAX_DEPTH` is left as written). Reference macros are never expanded here (the reader
must still see them as references); nor are macros whose bodies program TeX rather than
write mathematics (`\\csname`, `\\ifthenelse`, `\\label`, ...): their expansion would be noise.
`\\def` with delimited parameters (`\\def\\a#1.{...}`) is not supported and stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property

from formalbench.pipelines.construct.latex_text import CONTROL_WORD, ArgReader

MAX_DEPTH = 8
DEFINERS = ("newcommand", "renewcommand", "providecommand", "DeclareRobustCommand")
_PROGRAMMING = re.compile(
    r"\\(csname|expandafter|ifthenelse|if[a-z]*|else|fi|def|edef|gdef|let|newcommand|"
    r"renewcommand|label|hypertarget|index|addcontentsline|addtocontents|setcounter|"
    r"stepcounter|refstepcounter|newenvironment|begingroup|endgroup|IfFileExists|"
    r"makeatletter|phantomsection|markright|markboth)(?![A-Za-z])"
)
_TRAILING_WORD = re.compile(r"\\[A-Za-z@]+$")
_PARAM = re.compile(r"#(#|[1-9])")


@dataclass(frozen=True)
class MacroDef:
    """One macro definition as the source writes it."""

    name: str
    nargs: int
    default: str | None  # default of the optional first argument, if it has one
    body: str
    source: str = ""  # file that defines it

    @property
    def spec(self) -> str:
        if self.nargs == 0:
            return ""
        return ("[" if self.default is not None else "{") + "{" * (self.nargs - 1)

    @property
    def programs_tex(self) -> bool:
        return bool(_PROGRAMMING.search(self.body))

    def apply(self, args: list[str | None]) -> str:
        values = [self.default if a is None else a for a in args]

        def value(m: re.Match[str]) -> str:
            if m.group(1) == "#":
                return "#"
            v = values[int(m.group(1)) - 1] or ""
            if v[:1].isalpha() and _TRAILING_WORD.search(self.body, 0, m.start()):
                return " " + v  # `{\\bf#1}` with `b` is `{\\bf b}`, not `{\\bfb}`
            return v

        return _PARAM.sub(value, self.body)


def collect_macros(text: str, source: str = "") -> list[MacroDef]:
    """The macro definitions in `text` (comments already blanked), in source order."""
    found: list[MacroDef] = []
    reader: ArgReader | None = None
    for m in CONTROL_WORD.finditer(text):
        word = m.group(1).rstrip("*")
        if word not in DEFINERS and word not in ("def", "gdef", "DeclareMathOperator"):
            continue
        reader = reader or ArgReader(text)
        macro = _read_definition(reader, word, m.end(), source)
        if macro is not None:
            found.append(macro)
    return found


def _read_definition(reader: ArgReader, word: str, pos: int, source: str) -> MacroDef | None:
    text = reader.text
    if word in ("def", "gdef"):
        name_m = CONTROL_WORD.match(text, _skip_space(text, pos))
        if name_m is None:
            return None
        after = name_m.end()
        brace = text.find("{", after)
        params = text[after:brace] if brace >= 0 else ""
        if brace < 0 or not re.fullmatch(r"(#[1-9])*", params.strip()):
            return None  # delimited parameters: not supported
        body = reader.parse(brace, "{").values[0]
        if body is None:
            return None
        return MacroDef(name_m.group(1), params.count("#"), None, body, source)
    spec = "*{{" if word == "DeclareMathOperator" else "*{[[{"
    args = reader.parse(pos, spec)
    name = (args.values[1] or "").strip()
    if not name.startswith("\\"):
        return None
    if word == "DeclareMathOperator":
        body = args.values[2]
        if body is None:
            return None
        return MacroDef(name[1:], 0, None, "\\operatorname{" + body + "}", source)
    nargs_s, default, body = args.values[2], args.values[3], args.values[4]
    if body is None:
        return None
    try:
        nargs = int((nargs_s or "0").strip())
    except ValueError:
        return None
    return MacroDef(name[1:], nargs, default, body, source)


def _escaped(text: str, pos: int) -> bool:
    """Whether the backslash at `pos` is the second of `\\\\` (a line break, not a macro)."""
    n = 0
    while pos - n - 1 >= 0 and text[pos - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n":
        pos += 1
    return pos


class MacroTable(dict[str, MacroDef]):
    """Name -> definition, with one pattern finding calls of exactly these macros."""

    @cached_property
    def expanded(self) -> dict[str, str]:
        """Macro bodies (arguments substituted) already expanded: the same calls recur."""
        return {}

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        names = sorted(self, key=len, reverse=True)
        return re.compile(r"\\(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z@])")


def macro_table(defs: list[MacroDef], keep: Collection[str]) -> MacroTable:
    """Name -> definition to expand: later definitions win; `keep` and TeX programming stay."""
    table: dict[str, MacroDef] = {}
    for d in defs:
        table[d.name] = d
    return MacroTable({n: d for n, d in table.items() if n not in keep and not d.programs_tex})


def expand(text: str, macros: Mapping[str, MacroDef], depth: int = 0) -> str:
    """`text` with every call of a macro in `macros` replaced by its expansion."""
    if not macros or "\\" not in text:
        return text
    if not isinstance(macros, MacroTable):
        macros = MacroTable(macros)
    out: list[str] = []
    reader: ArgReader | None = None
    i = 0
    for m in macros.pattern.finditer(text):
        if m.start() < i or _escaped(text, m.start()):
            continue
        macro = macros[m.group(1)]
        end = m.end()
        args: list[str | None] = []
        if macro.nargs:
            reader = reader or ArgReader(text)
            read = reader.read(end, macro.spec)
            if any(v is None for v, c in zip(read.values, macro.spec, strict=False) if c == "{"):
                continue  # arguments missing: leave the call as written
            args, end = read.values, read.end
        body = macro.apply(args)
        if depth < MAX_DEPTH:
            done = macros.expanded.get(body)
            if done is None:
                done = macros.expanded[body] = expand(body, macros, depth + 1)
            body = done
        out.append(text[i : m.start()])
        out.append(body)
        if _TRAILING_WORD.search(body) and end < len(text) and text[end].isalpha():
            out.append(" ")  # a control word must not swallow the next letter
        i = end
    out.append(text[i:])
    return "".join(out)
