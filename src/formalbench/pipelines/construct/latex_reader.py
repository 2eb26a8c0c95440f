"""Reading a LaTeX textbook into labelled items (statements, exercises, divisions) in book order.

The book is walked from its main file (the one with `\\documentclass` and
`\\begin{document}`), following the include macros of its conventions; without a main file,
every `.tex` file is read in natural order. Only the constructs the conventions name are
looked at; their arguments and extents are read with pylatexenc (`ArgReader`), so the cost
is that of the statements and exercises, not of every formula of the narrative. Item texts
are comment-free, with the book's macros expanded; references are read from the expanded
text (so a `\\propref` defined as `Proposition~\\ref*{...}` is seen as the `\\ref*` it is).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.core.construct import Reference, TextbookItem
from formalbench.core.errors import InputError
from formalbench.pipelines.construct.latex_conventions import (
    THEOREM_WORDS,
    EnvRule,
    LatexConventions,
    conventions_named,
    detect_conventions,
)
from formalbench.pipelines.construct.latex_macros import (
    MacroDef,
    collect_macros,
    expand,
    macro_table,
)
from formalbench.pipelines.construct.latex_text import (
    CONTROL_WORD,
    ArgReader,
    blank_comments,
    find_env_end,
    line_of,
)
from formalbench.pipelines.construct.sources import find_files, read_text

_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n\s*\n(\s*\n)+")


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
        defs: list[MacroDef] = []
        self.style_files = find_files(root, (".sty", ".cls"))
        for path in self.tex_files + self.style_files:
            f = self._file(path)
            defs.extend(collect_macros(f.text, f.rel))
        base = (
            conventions_named(conventions)
            if conventions
            else detect_conventions({d.name for d in defs})
        )
        self.conv = base.with_theorems(self._declared_theorems())
        keep = set(self.conv.refs) | set(self.conv.includes) | set(self.conv.exercise_files)
        keep |= set(self.conv.block_macros) | set(self.conv.sections) | {"input", "include"}
        self.macros = macro_table(defs, keep)
        names = sorted(self.conv.refs, key=len, reverse=True)
        self._ref_pattern = re.compile(r"\\(" + "|".join(names) + r")(?![A-Za-z@])")
        self.book = BookReading(self._book_name(), self.conv.name)
        self._labels: dict[str, TextbookItem] = {}
        self._stack: list[Path] = []
        self._visited: set[Path] = set()
        self._groups: dict[tuple[str, int], tuple[int, str]] = {}
        self._titles: dict[int, str] = {}
        self._keys: dict[int, str] = {}
        self._counts: dict[int, int] = {}
        self._env_counts: dict[str, int] = {}
        self._has_chapters = False
        self._last_exercise: TextbookItem | None = None

    # ----------------------------------------------------------------- files and setup
    def _file(self, path: Path) -> _File:
        f = self._files.get(path)
        if f is None:
            text = blank_comments(read_text(path, self.root))
            f = self._files[path] = _File(
                path.relative_to(self.root).as_posix(), text, ArgReader(text)
            )
        return f

    def _main_files(self) -> list[Path]:
        mains = [
            p
            for p in self.tex_files
            if "\\documentclass" in self._file(p).text and "\\begin{document}" in self._file(p).text
        ]
        if mains:
            return [_pick_main(mains, self.root)]
        return self.tex_files

    def _book_name(self) -> str:
        mains = self._main_files()
        if len(mains) == 1 and mains[0].stem.lower() not in ("main", "book", "index", "root"):
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
                a = f.reader.read(m.end(), "*{[{[").values
                star, name, shared, title, within = (v.strip() if v else v for v in a)
                if not name or not title:
                    continue
                word = re.sub(r"[^a-z]", "", title.lower())
                kind = THEOREM_WORDS.get(word) or THEOREM_WORDS.get(name.lower().rstrip("*"))
                kind = kind or word or name
                declared[name] = EnvRule(
                    kind,
                    numbered=star is None,
                    counter=shared,
                    within=within,
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
        eq_inside = -1
        for m in CONTROL_WORD.finditer(text, pos):
            if m.start() < pos:
                continue
            word = m.group(1)
            if word == "begin":
                a = f.reader.read(m.end(), "{")
                env = (a.values[0] or "").strip()
                start = a.end
                base = env.rstrip("*")
                if base in self.conv.equation_envs:
                    end, after = find_env_end(text, env, start)
                    self._equations(f, env, m.start(), start, end, after)
                    eq_inside = after
                elif m.start() < inside:
                    if env in self.conv.envs and self.conv.envs[env].kind != "exercise":
                        end, _ = find_env_end(text, env, start)  # nested: fcla's properties
                        self._env_item(f, env, m.start(), start, end)  # inside a definition
                elif env in self.conv.envs or env in self.conv.exercise_envs:
                    end, after = find_env_end(text, env, start)
                    self._env_item(f, env, m.start(), start, end)
                    inside = after
                elif env in self.conv.solution_envs and self._last_exercise is not None:
                    end, after = find_env_end(text, env, start)
                    self._last_exercise.solution = self._clean(text[start:end])
                    pos = after
                elif env in self.conv.section_envs:
                    rule = self.conv.section_envs[env]
                    args = f.reader.read(start, rule.args)
                    self._division(f, rule.level, args.values, rule.title_arg, rule.key_arg,
                                   rule.label, rule.kind, m.start())  # fmt: skip
                elif env in self.conv.group_envs:
                    self._group(f, env, start)
                continue
            if m.start() < inside and word not in self.conv.block_macros:
                continue  # \\label inside an item is its own; divisions cannot be inside
            if word == "label":
                if m.start() >= eq_inside:
                    self._orphan_label(f, m.start(), m.end())
            elif word in self.conv.sections:
                rule = self.conv.sections[word]
                args = f.reader.read(m.end(), rule.args)
                self._division(f, rule.level, args.values, rule.title_arg, rule.key_arg,
                               rule.label, rule.kind, m.start())  # fmt: skip
                pos = args.end
            elif word in self.conv.includes:
                self._include(f, word, m.end())
            elif word in self.conv.exercise_files:
                self._exercise_files(f, word, m.start(), m.end())
            elif word in self.conv.block_macros:
                self._block(f, word, m.start(), m.end())
        self._stack.pop()

    # ----------------------------------------------------------------- divisions
    def _division(self, f: _File, level: int, values: list[str | None], title_arg: int | None,
                  key_arg: int | None, label: str | None, kind: str, pos: int) -> None:  # fmt: skip
        title = (values[title_arg] or "").strip() if title_arg is not None else ""
        key = (values[key_arg] or "").strip() if key_arg is not None else ""
        if level == 1:
            self._has_chapters = True
        self._counts[level] = self._counts.get(level, 0) + 1
        for deeper in [k for k in self._counts if k > level]:
            self._counts[deeper] = 0
        for deeper in [k for k in self._titles if k > level]:
            del self._titles[deeper]
            self._keys.pop(deeper, None)
        for counter in list(self._env_counts):
            within = _within_level(self.conv, counter)
            if (counter == "equation" and level == 1) or 0 <= level <= within:
                self._env_counts[counter] = 0
        self._titles[level] = _plain(expand(title, self.macros))
        self._keys[level] = key
        if label:
            item = TextbookItem(
                label=label.format(key, section=self._keys.get(2, "")),
                kind=kind,
                text="",
                title=self._titles[level],
                number=key or self._number(level),
                section=self._section(),
                source_file=f.rel,
                line=line_of(f.text, pos),
            )
            self._add(item, expandable=False)

    def _section(self) -> str:
        return " / ".join(t for lvl, t in sorted(self._titles.items()) if lvl >= 1 and t)

    def _number(self, level: int) -> str:
        first = 1 if self._has_chapters else 2
        return ".".join(str(self._counts.get(lv, 0)) for lv in range(first, level + 1))

    # ----------------------------------------------------------------- items
    def _env_item(self, f: _File, env: str, begin: int, start: int, end: int) -> None:
        is_exercise = env in self.conv.exercise_envs or (
            env in self.conv.envs and self.conv.envs[env].kind == "exercise"
        )
        rule = self.conv.envs.get(env) or EnvRule("exercise", within="section")
        args = f.reader.read(start, rule.args)
        body = f.text[args.end : end]
        label = None
        if rule.label_arg is not None:
            raw = (args.values[rule.label_arg] or "").strip()
            label = rule.label.format(raw, section=self._keys.get(2, "")) if raw else None
        label = label or _own_label(f, body, args.end)
        title = args.values[rule.title_arg] if rule.title_arg is not None else None
        number = None
        if rule.label_arg is not None:
            number = (args.values[rule.label_arg] or "").strip() or None
        elif rule.numbered:
            number = self._count(env, rule)
        kind = "exercise" if is_exercise else rule.kind
        text = self._clean(body)
        if is_exercise:
            number = number or str(len(self.book.exercises) + 1)
            local = self.conv.exercise_id.format(number=number, section=self._keys.get(2, ""))
            label = label or f"exercise:{local}"
            self._add_exercise(f, label, local, text, title, number, begin)
            return
        if label is None:
            return  # an unlabelled statement: nothing can refer to it
        self._add(
            TextbookItem(
                label=label,
                kind=kind,
                text=text,
                title=_plain(expand(title, self.macros)) if title else None,
                number=number,
                section=self._section(),
                source_file=f.rel,
                line=line_of(f.text, begin),
                refs=self._refs(text),
            ),
            expandable=rule.expand,
        )

    def _count(self, env: str, rule: EnvRule) -> str:
        counter = rule.counter or env
        owner = self.conv.envs.get(counter, rule)  # a shared counter numbers as its owner
        self._env_counts[counter] = self._env_counts.get(counter, 0) + 1
        level = _LEVELS.get(owner.within or "", 0)
        n = str(self._env_counts[counter])
        if owner.within and level:
            return f"{self._number(level)}.{n}"
        return n

    def _add_exercise(self, f: _File, label: str, local: str, text: str, title: str | None,
                      number: str, pos: int, solution: str | None = None,
                      source_file: str | None = None) -> None:  # fmt: skip
        prefix = self._group_prefix(f, pos)
        if prefix:
            text = prefix + "\n\n" + text
        item = TextbookItem(
            label=label,
            kind="exercise",
            text=text,
            title=_plain(expand(title, self.macros)) if title else None,
            number=number,
            section=self._section(),
            line=line_of(f.text, pos),
            solution=solution,
            source_file=source_file or f.rel,
            refs=self._refs(text),
        )
        if self._add(item, expandable=True):
            self.book.exercises[label] = ExerciseInfo(local, f"Exercise {local}")
            self._last_exercise = item

    def _exercise_files(self, f: _File, word: str, begin: int, pos: int) -> None:
        rule = self.conv.exercise_files[word]
        args = f.reader.read(pos, rule.args)
        number = (args.values[rule.number_arg] or "").strip()
        section = self._keys.get(2, "")
        path = self.root / rule.file.format(number, section=section)
        if not number or not path.is_file():
            return
        ef = self._file(path)
        text = self._clean(ef.text)
        solution, solution_file = None, ""
        if rule.solution:
            spath = self.root / rule.solution.format(number, section=section)
            if spath.is_file():
                solution = self._clean(self._file(spath).text)
                solution_file = self._file(spath).rel
        local = self.conv.exercise_id.format(number=number, section=section)
        label = rule.label.format(number, section=section)
        self._add_exercise(f, label, local, text, None, number, begin, solution, ef.rel)
        if solution is not None and rule.solution_label:
            self._add(
                TextbookItem(
                    label=rule.solution_label.format(number, section=section),
                    kind="solution",
                    text=solution,
                    number=number,
                    section=self._section(),
                    source_file=solution_file,
                    refs=self._refs(solution),
                ),
                expandable=False,
            )

    def _block(self, f: _File, word: str, begin: int, pos: int) -> None:
        rule = self.conv.block_macros[word]
        args = f.reader.read(pos, rule.args)
        key = (args.values[rule.label_arg] or "").strip()
        if not key:
            return
        if rule.file:
            path = self.root / rule.file.format(*[v or "" for v in args.values])
            body = self._file(path).text if path.is_file() else ""
        elif rule.text_arg is not None:
            body = args.values[rule.text_arg] or ""
        elif rule.until:
            stops = [j for s in rule.until if (j := f.text.find(s, args.end)) >= 0]
            body = f.text[args.end : min(stops, default=len(f.text))]
        else:
            body = ""
        text = self._clean(body)
        title = args.values[rule.title_arg] if rule.title_arg is not None else None
        self._add(
            TextbookItem(
                label=rule.label.format(key, section=self._keys.get(2, "")),
                kind=rule.kind,
                text=text,
                title=_plain(expand(title, self.macros)) if title else None,
                number=key,
                section=self._section(),
                source_file=f.rel,
                line=line_of(f.text, begin),
                refs=self._refs(text),
            ),
            expandable=rule.expand,
        )

    def _equations(self, f: _File, env: str, begin: int, start: int, end: int, after: int) -> None:
        body = f.text[start:end]
        labels = [m for m in CONTROL_WORD.finditer(body) if m.group(1) == "label"]
        numbered = not env.endswith("*")
        if numbered:
            rows = 1 if env.rstrip("*") == "equation" else body.count("\\\\") + 1
            rows -= body.count("\\nonumber") + body.count("\\notag")
            first = self._env_counts.get("equation", 0) + 1
            self._env_counts["equation"] = first - 1 + max(rows, 0)
        if not labels:
            return
        text = self._clean(f.text[begin:after])
        for i, m in enumerate(labels):
            key = (f.reader.read(start + m.end(), "{").values[0] or "").strip()
            if not key:
                continue
            number = None
            if numbered:
                n = str(first + i)
                number = f"{self._number(1)}.{n}" if self._has_chapters else n
            self._add(
                TextbookItem(
                    label=key,
                    kind="equation",
                    text=text,
                    number=number,
                    section=self._section(),
                    source_file=f.rel,
                    line=line_of(f.text, start + m.start()),
                    refs=self._refs(text),
                ),
                expandable=True,
            )

    def _orphan_label(self, f: _File, begin: int, pos: int) -> None:
        key = (f.reader.read(pos, "{").values[0] or "").strip()
        if key and key not in self._labels:
            level = max(self._titles, default=0)
            title = self._titles.get(level, "")
            self._add(
                TextbookItem(
                    label=key,
                    kind="section",
                    text="",
                    title=title or None,
                    number=self._number(level) if level else None,
                    section=self._section(),
                    source_file=f.rel,
                    line=line_of(f.text, begin),
                ),
                expandable=False,
            )

    def _include(self, f: _File, word: str, pos: int) -> None:
        rule = self.conv.includes[word]
        args = f.reader.read(pos, rule.args)
        values = [(v or "").strip() for v in args.values]
        if rule.level is not None:
            self._division(f, rule.level, list(args.values), rule.title_arg, rule.key_arg,
                           rule.label, rule.kind, pos)  # fmt: skip
        for i, template in enumerate(rule.files):
            if i and rule.level is not None:  # later files belong to the division, not to
                for deeper in [k for k in self._titles if k > rule.level]:  # its last part
                    del self._titles[deeper]
            path = self._resolve(template.format(*values))
            if path is not None:
                self._walk(path)

    def _resolve(self, name: str) -> Path | None:
        if not name:
            return None
        for candidate in (name, name + ".tex"):
            path = self.root / candidate
            if path.is_file() and path.suffix in (".tex", ".ltx", ""):
                return path
        return None

    def _group(self, f: _File, env: str, start: int) -> None:
        """Remember an exercise group's lead-in (text before its first exercise)."""
        end, _ = find_env_end(f.text, env, start)
        first = end
        for word in list(self.conv.exercise_files) + [
            "begin{" + e + "}" for e in self.conv.exercise_envs
        ]:
            j = f.text.find("\\" + word, start, end)
            if j >= 0:
                first = min(first, j)
        self._groups[(f.rel, start)] = (end, self._clean(f.text[start:first]))

    def _group_prefix(self, f: _File, pos: int) -> str:
        for (rel, start), (end, lead) in self._groups.items():
            if rel == f.rel and start <= pos < end:
                return lead
        return ""

    # ----------------------------------------------------------------- text and refs
    def _inline_inputs(self, text: str, depth: int) -> str:
        """Text with each `\\input{file}` (from an expanded macro) replaced by the file's text."""
        if "\\input" not in text or depth > 5:
            return text
        out, i, reader = [], 0, ArgReader(text)
        for m in CONTROL_WORD.finditer(text):
            if m.group(1) != "input" or m.start() < i:
                continue
            a = reader.read(m.end(), "{")
            path = self._resolve((a.values[0] or "").strip())
            if path is None:
                continue
            out += [text[i : m.start()], self._clean(self._file(path).text, depth + 1)]
            i = a.end
        return "".join(out) + text[i:]

    def _clean(self, body: str, depth: int = 0) -> str:
        """Item text from a body whose comments are blanked: unwrapped, expanded, tidied."""
        for env in self.conv.unwrap_envs:
            body = body.replace("\\begin{" + env + "}", "").replace("\\end{" + env + "}", "\n")
        text = self._inline_inputs(expand(body, self.macros), depth)
        text = _SPACES.sub(" ", text)
        text = "\n".join(line.strip() for line in text.split("\n"))
        return _BLANK_LINES.sub("\n\n", text).strip()

    def _refs(self, text: str) -> list[Reference]:
        refs: list[Reference] = []
        reader: ArgReader | None = None
        for m in self._ref_pattern.finditer(text):
            rule = self.conv.refs[m.group(1)]
            reader = reader or ArgReader(text)
            a = reader.read(m.end(), rule.args)
            keys = a.values[rule.key_arg]
            if keys is None:
                continue
            kind = rule.kind
            if rule.kind_arg is not None:
                kind = (a.values[rule.kind_arg] or "").strip() or kind
            raw = text[m.start() : a.end]
            for key in keys.split(","):
                key = key.strip()
                if key:
                    label = rule.label.format(key=key, kind=kind or "")
                    refs.append(Reference(raw=raw, key=label, kind=kind))
        return refs

    def _add(self, item: TextbookItem, *, expandable: bool) -> bool:
        if item.label in self._labels:
            self.book.duplicate_labels.append(item.label)
            return False
        self._labels[item.label] = item
        self.book.items.append(item)
        if expandable:
            self.book.expandable.add(item.label)
        return True


_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3}


def _within_level(conv: LatexConventions, counter: str) -> int:
    if counter in conv.exercise_envs and counter not in conv.envs:
        return _LEVELS["section"]  # an exercise environment no \newtheorem declares
    rule = conv.envs.get(counter)
    return _LEVELS.get(rule.within or "", -1) if rule and rule.within else -1


def _own_label(f: _File, body: str, offset: int) -> str | None:
    """The first `\\label` of an environment's body that no inner environment owns."""
    depth = 0
    for m in CONTROL_WORD.finditer(body):
        word = m.group(1)
        if word == "begin":
            depth += 1
        elif word == "end":
            depth -= 1
        elif word == "label" and depth <= 0:
            return (f.reader.read(offset + m.end(), "{").values[0] or "").strip() or None
    return None


def _plain(title: str) -> str:
    return " ".join(title.replace("{", "").replace("}", "").split())


def _pick_main(mains: list[Path], root: Path) -> Path:
    """Of several main files, the one named like its folder (or main/book), else the largest."""

    def score(p: Path) -> tuple[int, int, int]:
        named = p.stem.lower() in (p.parent.name.lower(), p.parent.parent.name.lower())
        usual = p.stem.lower() in ("main", "book", "index")
        return (len(p.relative_to(root).parts), -int(named or usual), -p.stat().st_size)

    return min(mains, key=score)
