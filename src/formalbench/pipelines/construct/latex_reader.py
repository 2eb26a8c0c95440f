"""Reading a LaTeX textbook into labelled items (statements, exercises, divisions) in book order.

The book is walked from its main file (the one with `\\documentclass` and
`\\begin{document}`), following the include macros of its conventions; without a main file,
every `.tex` file is read in natural order. Only the constructs the conventions name are
looked at; their arguments and extents are read with `ArgReader` (pylatexenc), so the cost
is that of the statements and exercises, not of every formula of the narrative.
Item texts and references: `latex_itemtext`; division titles and numbers: `latex_numbering`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from formalbench.core.construct import STATEMENT_KINDS, TextbookItem
from formalbench.core.errors import InputError
from formalbench.pipelines.construct.latex_conventions import (
    THEOREM_WORDS,
    EnvRule,
    SectionRule,
    conventions_named,
    detect_conventions,
)
from formalbench.pipelines.construct.latex_itemtext import ItemText
from formalbench.pipelines.construct.latex_macros import MacroDef, collect_macros, macro_table
from formalbench.pipelines.construct.latex_numbering import Numbering
from formalbench.pipelines.construct.latex_text import (
    CONTROL_WORD,
    ArgReader,
    blank_comments,
    find_env_end,
    line_of,
)
from formalbench.pipelines.construct.sources import find_files, read_text

GENERIC_MAIN_NAMES = ("main", "book", "index", "root")


@dataclass
class ExerciseInfo:
    """How the book names an exercise (beside its item)."""

    local_id: str  # e.g. `NM.C10` or `2.3`
    source_idx: str  # e.g. `Exercise NM.C10`


@dataclass
class BookReading:
    name: str
    conventions: str
    items: list[TextbookItem] = field(default_factory=list)
    exercises: dict[str, ExerciseInfo] = field(default_factory=dict)  # by item label
    expandable: set[str] = field(default_factory=set)  # labels Algorithm 1 may insert
    duplicate_labels: list[str] = field(default_factory=list)


@dataclass
class _File:
    rel: str
    text: str  # comments blanked
    reader: ArgReader


class LatexBookReader:
    """One reading of one book; `read()` returns the items."""

    def __init__(self, root: Path, conventions: str | None = None) -> None:
        self.root = root
        self.tex_files = find_files(root, (".tex", ".ltx"))
        if not self.tex_files:
            raise InputError(f"{root}: no .tex files in this textbook folder")
        self._files: dict[Path, _File] = {}
        self.style_files = find_files(root, (".sty", ".cls"))
        defs: list[MacroDef] = []
        for path in self.tex_files + self.style_files:
            f = self._file(path)
            defs.extend(collect_macros(f.text, f.rel))
        if conventions:
            base = conventions_named(conventions)
        else:
            base = detect_conventions({d.name for d in defs})
        self.conv = base.with_theorems(self._declared_theorems())
        keep = set(self.conv.refs) | set(self.conv.includes) | set(self.conv.exercise_files)
        keep |= set(self.conv.block_macros) | set(self.conv.sections) | {"input", "include"}
        keep |= set(self.conv.solution_macros)
        self.text = ItemText(
            self.conv, macro_table(defs, keep), self._resolve, lambda p: self._file(p).text
        )
        self.at = Numbering(self.conv)
        self.book = BookReading(self._book_name(), self.conv.name)
        self._labels: set[str] = set()
        self._stack: list[Path] = []
        self._visited: set[Path] = set()
        self._groups: dict[tuple[str, int], tuple[int, str]] = {}
        self._last_exercise: TextbookItem | None = None

    # ----------------------------------------------------------------- files and setup
    def _file(self, path: Path) -> _File:
        f = self._files.get(path)
        if f is None:
            text = blank_comments(read_text(path, self.root))
            rel = path.relative_to(self.root).as_posix()
            f = self._files[path] = _File(rel, text, ArgReader(text))
        return f

    def _resolve(self, name: str) -> Path | None:
        if not name:
            return None
        for candidate in (name, name + ".tex"):
            path = self.root / candidate
            if path.is_file() and path.suffix in (".tex", ".ltx", ""):
                return path
        return None

    def _main_files(self) -> list[Path]:
        mains = [
            p
            for p in self.tex_files
            if "\\documentclass" in self._file(p).text and "\\begin{document}" in self._file(p).text
        ]
        return [pick_main(mains, self.root)] if mains else self.tex_files

    def _book_name(self) -> str:
        mains = self._main_files()
        if len(mains) == 1 and mains[0].stem.lower() not in GENERIC_MAIN_NAMES:
            return mains[0].stem
        return self.root.name

    def _declared_theorems(self) -> dict[str, EnvRule]:
        """Environments declared with `\\newtheorem{name}[counter]{Title}[within]`."""
        declared: dict[str, EnvRule] = {}
        for path in self.tex_files + self.style_files:
            f = self._file(path)
            for m in CONTROL_WORD.finditer(f.text):
                if m.group(1) != "newtheorem":
                    continue
                a = f.reader.parse(m.end(), "*{[{[").values
                star, name, shared, title, within = (v.strip() if v else v for v in a)
                if not name or not title:
                    continue
                word = "".join(c for c in title.lower() if c.isalpha())
                kind = THEOREM_WORDS.get(word) or THEOREM_WORDS.get(name.lower())
                kind = kind or word or name
                declared[name] = EnvRule(
                    kind,
                    numbered=star is None,
                    counter=shared,
                    within=within,
                    expand=kind in STATEMENT_KINDS or kind == "exercise",  # not remarks
                )
        return declared

    # ----------------------------------------------------------------- walking
    def read(self) -> BookReading:
        for path in self._main_files():
            if path not in self._visited:
                self._walk(path)
        return self.book

    def _walk(self, path: Path) -> None:
        if path in self._stack or len(self._stack) > 30:
            return
        self._stack.append(path)
        self._visited.add(path)
        f = self._file(path)
        text = f.text
        begin = text.find("\\begin{document}")
        pos = begin if begin >= 0 and "\\documentclass" in text else 0
        inside = -1  # end of the statement/exercise environment the scan is in
        eq_inside = -1  # end of the equation environment the scan is in
        for m in CONTROL_WORD.finditer(text, pos):
            if m.start() < pos:
                continue
            word = m.group(1)
            if word == "begin":
                a = f.reader.read(m.end(), "{")
                env, start = (a.values[0] or "").strip(), a.end
                if env.rstrip("*") in self.conv.equation_envs:
                    end, eq_inside = find_env_end(text, env, start)
                    self._equations(f, env, m.start(), start, end, eq_inside)
                elif m.start() < inside:
                    if env in self.conv.envs and self.conv.envs[env].kind != "exercise":
                        end, _ = find_env_end(text, env, start)  # nested: fcla's properties
                        self._env_item(f, env, m.start(), start, end)  # inside a definition
                elif env in self.conv.envs or env in self.conv.exercise_envs:
                    end, inside = find_env_end(text, env, start)
                    self._env_item(f, env, m.start(), start, end)
                elif env in self.conv.solution_envs and self._last_exercise is not None:
                    end, pos = find_env_end(text, env, start)
                    self._last_exercise.solution = self.text.clean(text[start:end])
                elif env in self.conv.section_envs:
                    rule = self.conv.section_envs[env]
                    self._division(f, rule, f.reader.read(start, rule.args).values, m.start())
                elif env in self.conv.group_envs:
                    self._group(f, env, start)
                continue
            if m.start() < inside and word not in self.conv.block_macros:
                continue  # a \label inside an item is the item's; no division is inside one
            if word == "label":
                if m.start() >= eq_inside:
                    self._orphan_label(f, m.start(), m.end())
            elif word in self.conv.sections:
                rule = self.conv.sections[word]
                args = f.reader.read(m.end(), rule.args)
                self._division(f, rule, args.values, m.start())
                pos = args.end
            elif word in self.conv.includes:
                self._include(f, word, m.end())
            elif word in self.conv.exercise_files:
                self._exercise_files(f, word, m.start(), m.end())
            elif word in self.conv.block_macros:
                self._block(f, word, m.start(), m.end())
            elif word in self.conv.solution_macros and self._last_exercise is not None:
                args = f.reader.read(m.end(), "{")
                self._last_exercise.solution = self.text.clean(args.values[0] or "")
                pos = args.end
        self._stack.pop()

    # ----------------------------------------------------------------- divisions
    def _division(self, f: _File, rule: SectionRule, values: list[str | None], pos: int) -> None:
        title = (values[rule.title_arg] or "").strip()
        key = (values[rule.key_arg] or "").strip() if rule.key_arg is not None else ""
        self.at.open_division(rule.level, self.text.title(title) or "", key)
        if rule.label:
            self._add(
                self._item(
                    f,
                    pos,
                    rule.label.format(key, section=self.at.section_key),
                    rule.kind,
                    "",
                    title=self.at.titles[rule.level],
                    number=key or self.at.number(rule.level),
                ),  # fmt: skip
                expandable=False,
            )

    def _include(self, f: _File, word: str, pos: int) -> None:
        rule = self.conv.includes[word]
        args = f.reader.read(pos, rule.args)
        values = [(v or "").strip() for v in args.values]
        if rule.level is not None and rule.title_arg is not None:
            division = SectionRule(
                rule.level, rule.args, rule.title_arg, rule.key_arg, rule.label, rule.kind
            )
            self._division(f, division, args.values, pos)
        for i, template in enumerate(rule.files):
            if i and rule.level is not None:
                self.at.close_below(rule.level)  # later files belong to the division itself
            path = self._resolve(template.format(*values))
            if path is not None:
                self._walk(path)

    # ----------------------------------------------------------------- items
    def _item(self, f: _File, pos: int, label: str, kind: str, text: str,
              **extra: object) -> TextbookItem:  # fmt: skip
        return TextbookItem(
            label=label,
            kind=kind,
            text=text,
            section=self.at.section,
            source_file=f.rel,
            line=line_of(f.text, pos),
            refs=self.text.refs(text) if text else [],
            **extra,  # type: ignore[arg-type]  # the optional fields of TextbookItem
        )

    def _env_item(self, f: _File, env: str, begin: int, start: int, end: int) -> None:
        rule = self.conv.envs.get(env) or EnvRule("exercise", within="section")
        args = f.reader.read(start, rule.args)
        body = f.text[args.end : end]
        own, inner = _labels(f, body, args.end, self.conv.equation_envs)
        label, number = own, None
        if rule.label_arg is not None:
            number = (args.values[rule.label_arg] or "").strip() or None
            label = rule.label.format(number, section=self.at.section_key) if number else own
        elif rule.numbered:
            number = self.at.count(env, rule)
        title = args.values[rule.title_arg] if rule.title_arg is not None else None
        text = self.text.clean(body)
        if env in self.conv.exercise_envs or rule.kind == "exercise":
            number = number or str(len(self.book.exercises) + 1)
            local = self.conv.exercise_id.format(number=number, section=self.at.section_key)
            label = label or f"exercise:{local}"
            item = self._add_exercise(f, label, local, text, title, number, begin)
            kind, expandable = "exercise", True
        elif label is not None or inner:
            if label is None:  # only its parts are labelled: the first part names it
                (label, _), inner = inner[0], inner[1:]
            title = self.text.title(title)
            item = self._item(f, begin, label, rule.kind, text, title=title, number=number)
            kind, expandable = rule.kind, rule.expand
            self._add(item, expandable=expandable)
        else:
            return  # an unlabelled statement: nothing can refer to it
        for key, pos in inner:  # a label of a part (an \item): a reference to the whole
            part_kind = "exercise_part" if kind == "exercise" else kind
            alias = item.model_copy(
                update={"label": key, "kind": part_kind, "line": line_of(f.text, pos)}
            )
            self._add(alias, expandable=expandable and kind != "exercise")

    def _add_exercise(self, f: _File, label: str, local: str, text: str, title: str | None,
                      number: str, pos: int, solution: str | None = None,
                      source_file: str | None = None) -> TextbookItem:  # fmt: skip
        lead_in = self._group_prefix(f, pos)
        if lead_in:
            text = lead_in + "\n\n" + text
        item = self._item(
            f, pos, label, "exercise", text,
            title=self.text.title(title), number=number, solution=solution,
        )  # fmt: skip
        if source_file:
            item.source_file = source_file
        if self._add(item, expandable=True):
            self.book.exercises[label] = ExerciseInfo(local, f"Exercise {local}")
            self._last_exercise = item
        return item

    def _exercise_files(self, f: _File, word: str, begin: int, pos: int) -> None:
        rule = self.conv.exercise_files[word]
        number = (f.reader.read(pos, rule.args).values[rule.number_arg] or "").strip()
        section = self.at.section_key
        path = self.root / rule.file.format(number, section=section)
        if not number or not path.is_file():
            return
        ef = self._file(path)
        solution, sf = None, None
        spath = self.root / rule.solution.format(number, section=section) if rule.solution else None
        if spath is not None and spath.is_file():
            sf = self._file(spath)
            solution = self.text.clean(sf.text)
        local = self.conv.exercise_id.format(number=number, section=section)
        label = rule.label.format(number, section=section)
        text = self.text.clean(ef.text)
        self._add_exercise(f, label, local, text, None, number, begin, solution, ef.rel)
        if sf is not None and solution is not None and rule.solution_label:
            key = rule.solution_label.format(number, section=section)
            self._add(self._item(sf, 0, key, "solution", solution, number=number), expandable=False)

    def _block(self, f: _File, word: str, begin: int, pos: int) -> None:
        rule = self.conv.block_macros[word]
        args = f.reader.read(pos, rule.args)
        key = (args.values[rule.label_arg] or "").strip()
        if not key:
            return
        body = ""
        if rule.file:
            path = self.root / rule.file.format(*[v or "" for v in args.values])
            body = self._file(path).text if path.is_file() else ""
        elif rule.text_arg is not None:
            body = args.values[rule.text_arg] or ""
        elif rule.until:
            stops = [j for s in rule.until if (j := f.text.find(s, args.end)) >= 0]
            body = f.text[args.end : min(stops, default=len(f.text))]
        title = self.text.title(args.values[rule.title_arg] if rule.title_arg is not None else None)
        label = rule.label.format(key, section=self.at.section_key)
        item = self._item(
            f, begin, label, rule.kind, self.text.clean(body), title=title, number=key
        )
        self._add(item, expandable=rule.expand)

    def _equations(self, f: _File, env: str, begin: int, start: int, end: int, after: int) -> None:
        body = f.text[start:end]
        labels = [m for m in CONTROL_WORD.finditer(body) if m.group(1) == "label"]
        numbers: list[str] = []
        if not env.endswith("*"):
            rows = 1 if env == "equation" else body.count("\\\\") + 1
            numbers = self.at.count_equations(
                rows - body.count("\\nonumber") - body.count("\\notag")
            )
        if not labels:
            return
        text = self.text.clean(f.text[begin:after])
        for i, m in enumerate(labels):
            key = (f.reader.read(start + m.end(), "{").values[0] or "").strip()
            if key:
                number = numbers[i] if i < len(numbers) else None
                item = self._item(f, start + m.start(), key, "equation", text, number=number)
                self._add(item, expandable=True)

    def _orphan_label(self, f: _File, begin: int, pos: int) -> None:
        """A `\\label` outside any item: it names the division it follows."""
        key = (f.reader.read(pos, "{").values[0] or "").strip()
        if key and key not in self._labels:
            level = self.at.deepest
            title = self.at.titles.get(level) or None
            number = self.at.number(level) if level else None
            item = self._item(f, begin, key, "section", "", title=title, number=number)
            self._add(item, expandable=False)

    def _group(self, f: _File, env: str, start: int) -> None:
        """Remember an exercise group's lead-in (its text before its first exercise)."""
        end, _ = find_env_end(f.text, env, start)
        first = end
        for word in list(self.conv.exercise_files) + [
            "begin{" + e + "}" for e in self.conv.exercise_envs
        ]:
            j = f.text.find("\\" + word, start, end)
            if j >= 0:
                first = min(first, j)
        self._groups[(f.rel, start)] = (end, self.text.clean(f.text[start:first]))

    def _group_prefix(self, f: _File, pos: int) -> str:
        for (rel, start), (end, lead) in self._groups.items():
            if rel == f.rel and start <= pos < end:
                return lead
        return ""

    def _add(self, item: TextbookItem, *, expandable: bool) -> bool:
        if item.label in self._labels:
            self.book.duplicate_labels.append(item.label)
            return False
        self._labels.add(item.label)
        self.book.items.append(item)
        if expandable:
            self.book.expandable.add(item.label)
        return True


def _labels(
    f: _File, body: str, offset: int, equation_envs: tuple[str, ...]
) -> tuple[str | None, list[tuple[str, int]]]:
    """An environment's own `\\label` (the first no inner environment holds) and the labels
    of its parts (inside inner environments other than equations, which label themselves)."""
    own: str | None = None
    inner: list[tuple[str, int]] = []
    stack: list[str] = []
    for m in CONTROL_WORD.finditer(body):
        word = m.group(1)
        if word in ("begin", "end"):
            name = (f.reader.read(offset + m.end(), "{").values[0] or "").strip().rstrip("*")
            if word == "begin":
                stack.append(name)
            elif stack:
                stack.pop()
        elif word == "label":
            key = (f.reader.read(offset + m.end(), "{").values[0] or "").strip()
            if not key or any(env in equation_envs for env in stack):
                continue
            if not stack and own is None:
                own = key
            else:
                inner.append((key, offset + m.start()))
    return own, inner


def pick_main(mains: list[Path], root: Path) -> Path:
    """Of several main files, the one named like its folder (or main/book), else the largest."""

    def score(p: Path) -> tuple[int, int, int]:
        named = p.stem.lower() in (p.parent.name.lower(), p.parent.parent.name.lower())
        usual = p.stem.lower() in GENERIC_MAIN_NAMES
        return (len(p.relative_to(root).parts), -int(named or usual), -p.stat().st_size)

    return min(mains, key=score)
