"""How a LaTeX textbook writes its statements, exercises and references: configuration.

The reader is one program for every book; what differs between books is data:
`GENERAL` covers the common amsthm style (`\\newtheorem` environments such as `thm`, `defn`,
`prop`, `\\label`/`\\ref`/`\\eqref`/`\\cref`, `exercise` environments inside chapter files,
`\\input`/`\\include`); `FCLA` covers "A First Course in Linear Algebra" (environments
`\\begin{theorem}{ACRONYM}{Title}{index}`, references `\\acronymref{theorem}{NMUS}`, one file
per exercise and per solution pulled in by `\\exercise{C10}{contributor}`).
`detect_conventions` picks one from the sources; callers may name one instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from formalbench.core.construct import STATEMENT_KINDS
from formalbench.core.errors import InputError


@dataclass(frozen=True)
class EnvRule:
    """An environment that makes a labelled item."""

    kind: str
    args: str = "["  # pylatexenc spec of the arguments after `\begin{env}`
    label_arg: int | None = None  # argument holding the label; else a `\label` inside
    title_arg: int | None = 0  # argument holding the title
    label: str = "{0}"  # label template: {0} the label argument, {section} the section key
    numbered: bool = True
    counter: str | None = None  # counter shared with another environment (\newtheorem[..])
    within: str | None = None  # counter it is numbered within (chapter, section)
    expand: bool = True  # an item references are followed into (Algorithm 1)


@dataclass(frozen=True)
class RefRule:
    """A macro that refers to labels."""

    args: str  # pylatexenc spec
    key_arg: int
    kind_arg: int | None = None
    kind: str | None = None  # the kind the macro itself names (`\eqref`: equation)
    label: str = "{key}"  # label template: {key}, {kind}


@dataclass(frozen=True)
class IncludeRule:
    """A macro that pulls files in (`\\input`), possibly opening a section (fcla `\\sect`)."""

    args: str
    files: tuple[str, ...]  # templates over the arguments: "{0}", "sections/{0}.tex"
    level: int | None = None  # sectioning level it opens (0 part, 1 chapter, 2 section, 3 sub)
    key_arg: int | None = None
    title_arg: int | None = None
    label: str | None = None  # label of the division, e.g. "section.{0}"
    kind: str = "section"


@dataclass(frozen=True)
class SectionRule:
    """A sectioning command (`\\chapter{Title}`), or a macro/environment acting as one."""

    level: int
    args: str = "*[{"
    title_arg: int = 2
    key_arg: int | None = None
    label: str | None = None
    kind: str = "section"


@dataclass(frozen=True)
class ExerciseFileRule:
    """A macro naming an exercise whose text (and solution) live in files of their own."""

    args: str
    number_arg: int
    file: str  # template: {0} the number, {section} the section key
    solution: str | None = None
    label: str = "exercise.{section}.{0}"
    solution_label: str | None = "solution.{section}.{0}"


@dataclass(frozen=True)
class BlockRule:
    """A macro that labels the text after it (fcla `\\property{AC}{Title}{index}`)."""

    kind: str
    args: str
    label_arg: int
    title_arg: int | None
    label: str
    until: tuple[str, ...] = ()  # the text runs to the first of these; () no text after it
    text_arg: int | None = None  # or the text is this argument
    file: str | None = None  # or the text is this file (template over the arguments)
    expand: bool = True


@dataclass(frozen=True)
class LatexConventions:
    name: str
    envs: dict[str, EnvRule]
    exercise_envs: tuple[str, ...] = ("exercise", "problem", "exer", "question")
    solution_envs: tuple[str, ...] = ("solution", "answer", "soln")
    solution_macros: tuple[str, ...] = ("exsol",)  # `\exsol{answer}` after an exercise
    group_envs: tuple[str, ...] = ()  # a group's lead-in text is prefixed to its exercises
    equation_envs: tuple[str, ...] = (
        "equation", "align", "gather", "multline", "eqnarray", "flalign", "alignat",
    )  # fmt: skip
    refs: dict[str, RefRule] = field(default_factory=dict)
    includes: dict[str, IncludeRule] = field(default_factory=dict)
    sections: dict[str, SectionRule] = field(default_factory=dict)
    section_envs: dict[str, SectionRule] = field(default_factory=dict)
    exercise_files: dict[str, ExerciseFileRule] = field(default_factory=dict)
    unwrap_envs: tuple[str, ...] = ()  # wrappers dropped from item texts
    block_macros: dict[str, BlockRule] = field(default_factory=dict)
    exercise_id: str = "{number}"  # template of the exercise id within the book

    def with_theorems(self, declared: dict[str, EnvRule]) -> LatexConventions:
        """These conventions plus environments a book declares with `\\newtheorem`."""
        envs = dict(self.envs)
        envs.update(declared)
        return LatexConventions(**{**self.__dict__, "envs": envs})


_REF = RefRule("*{", key_arg=1)
GENERAL_REFS = {
    "ref": _REF,
    "pageref": _REF,
    "autoref": _REF,
    "nameref": _REF,
    "vref": _REF,
    "cref": _REF,
    "Cref": _REF,
    "eqref": RefRule("*{", key_arg=1, kind="equation"),
    "hyperref": RefRule("[{", key_arg=0),  # \hyperref[label]{text}; the URL form has no key
}
THEOREM_WORDS = {
    "definition": "definition", "defn": "definition", "def": "definition", "dfn": "definition",
    "theorem": "theorem", "thm": "theorem", "lemma": "lemma", "lem": "lemma",
    "proposition": "proposition", "prop": "proposition", "corollary": "corollary",
    "cor": "corollary", "coro": "corollary", "example": "example", "ex": "example",
    "exa": "example", "exmp": "example", "algorithm": "algorithm", "alg": "algorithm",
    "algo": "algorithm", "exercise": "exercise", "exer": "exercise", "problem": "exercise",
    "question": "exercise", "claim": "lemma", "fact": "proposition", "remark": "remark",
    "rem": "remark", "note": "remark", "conjecture": "conjecture", "notation": "notation",
}  # fmt: skip

GENERAL = LatexConventions(
    name="general",
    envs={k: EnvRule(k) for k in STATEMENT_KINDS if k != "equation"}
    | {"algorithm": EnvRule("algorithm", args="[", title_arg=None)},
    refs=GENERAL_REFS,
    includes={
        "input": IncludeRule("{", ("{0}",)),
        "include": IncludeRule("{", ("{0}",)),
        "subfile": IncludeRule("{", ("{0}",)),
    },
    sections={
        "part": SectionRule(0),
        "chapter": SectionRule(1),
        "section": SectionRule(2),
        "subsection": SectionRule(3),
    },
)


def _fcla_env(kind: str, *, expand: bool = True) -> EnvRule:
    """`\\begin{theorem}{ACRONYM}{Title}{index entry}`, labelled `theorem.ACRONYM`."""
    return EnvRule(kind, "{{{", label_arg=0, title_arg=1, label=kind + ".{0}", expand=expand)


FCLA = LatexConventions(
    name="fcla",
    envs={
        "definition": _fcla_env("definition"),
        "theorem": _fcla_env("theorem"),
        "example": _fcla_env("example"),
        "property": _fcla_env("property"),
        "technique": _fcla_env("technique", expand=False),
        "computation": _fcla_env("computation", expand=False),
        "sagemath": _fcla_env("sage", expand=False),
    },
    exercise_envs=(),
    solution_envs=(),
    solution_macros=(),
    group_envs=("exercisegroup",),
    refs=GENERAL_REFS
    | {
        "acronymref": RefRule("{{", key_arg=1, kind_arg=0, label="{kind}.{key}"),
        "archetyperef": RefRule("{", key_arg=0, kind="archetype", label="archetype.{key}"),
    },
    includes={
        "input": IncludeRule("{", ("{0}",)),
        "prt": IncludeRule("{{", (), 0, 0, 1, "part.{0}", "part"),
        "chap": IncludeRule("{{", (), 1, 0, 1, "chapter.{0}", "chapter"),
        "appdx": IncludeRule("{{", (), 1, 0, 1, "appendix.{0}", "appendix"),
        "sect": IncludeRule(
            "{{", ("sections/{0}.tex", "exercises/{0}.tex"), 2, 0, 1, "section.{0}"
        ),
    },
    sections={  # fcla writes a subsection either way
        "subsect": SectionRule(3, "{{", 1, 0, "subsection.{section}.{0}", "subsection"),
    },
    section_envs={
        "subsect": SectionRule(3, "{{", 1, 0, "subsection.{section}.{0}", "subsection"),
    },
    exercise_files={
        "exercise": ExerciseFileRule(
            "{{", 0, "exercises/{section}/{0}.tex", "solutions/{section}/{0}.tex"
        ),
    },
    unwrap_envs=("para",),
    block_macros={
        "archetypename": BlockRule(
            "archetype", "{", 0, None, "archetype.{0}", until=("\\archetypename", "\\appdx")
        ),
        "property": BlockRule("property", "{{{", 0, 1, "property.{0}", until=("\\item", "\\end{")),
        "denote": BlockRule("notation", "{{{{", 0, 1, "notation.{0}", text_arg=2, expand=False),
        "diagram": BlockRule("diagram", "{{", 0, 1, "diagram.{0}", expand=False),
        "techniqueappendix": BlockRule(
            "technique", "{{{", 0, 1, "technique.{0}", file="techniques/{0}.tex", expand=False
        ),
    },
    exercise_id="{section}.{number}",
)

CONVENTIONS = {c.name: c for c in (GENERAL, FCLA)}


def conventions_named(name: str) -> LatexConventions:
    try:
        return CONVENTIONS[name]
    except KeyError:
        known = ", ".join(sorted(CONVENTIONS))
        raise InputError(f"unknown LaTeX conventions {name!r} (known: {known})") from None


def detect_conventions(defined_macros: set[str]) -> LatexConventions:
    """fcla's conventions where the book defines its `\\acronymref` reference; else general."""
    return FCLA if "acronymref" in defined_macros else GENERAL
