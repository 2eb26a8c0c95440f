"""Extraction of small textbooks written here: general LaTeX conventions, Markdown, bad input.

The fcla textbook (real data) has its own tests in test_construct_fcla.py.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from formalbench.core.construct import ExpansionNode
from formalbench.core.errors import FormalbenchError, InputError
from formalbench.pipelines.construct.extract import extract_textbook
from formalbench.pipelines.construct.latex_macros import collect_macros, expand, macro_table

MAIN = r"""\documentclass{book}
\usepackage{amsthm}
\newtheorem{thm}{Theorem}[chapter]
\newtheorem{prop}[thm]{Proposition}
\newtheorem{lem}[thm]{Lemma}
\newtheorem{defn}{Definition}[chapter]
\newcommand{\propref}[1]{Proposition~\ref*{#1}}
\newcommand{\R}{\mathbb{R}}
\newcommand{\norm}[1]{\lVert #1 \rVert}
\renewcommand{\vec}[2][n]{(#2_1,\dots,#2_#1)}
\def\abs#1{\lvert #1\rvert}
\begin{document}
% \input{notes}  -- a commented-out include is not followed
\include{ch1}
\input{ch2.tex}
\end{document}
"""

CH1 = r"""\chapter{Norms}
\section{Basics}
\begin{defn}[Norm]\label{def:norm}
A norm on $\R^n$ is a map $\norm{\cdot}$ with $\norm{x} = 0$ only for $x = 0$. % a remark
\end{defn}
\begin{equation}\label{eq:tri}
\norm{x+y} \le \norm{x} + \norm{y}
\end{equation}
\begin{prop}\label{prop:a}
Every norm satisfies \eqref{eq:tri}; see also Lemma~\ref{lem:b}.
\end{prop}
\begin{lem}\label{lem:b}
This follows from \propref{prop:a}.
\end{lem}
\begin{thm}[Deep]\label{thm:deep}
By \cref{thm:deeper}, $\vec{x}$ and $\vec[3]{y}$ exist.
\end{thm}
\begin{thm}\label{thm:deeper}
See \ref{thm:deepest}.
\end{thm}
\begin{thm}\label{thm:deepest}
Uses Definition~\ref{def:norm}.
\end{thm}
\section{Exercises}
\begin{exercise}\label{ex:one}
Show that $\abs{x}$ is a norm on $\R$ (use \propref{prop:a} and \cref{thm:deep}).
\end{exercise}
\begin{solution}
Check the axioms of Definition~\ref{def:norm}.
\end{solution}
\begin{exercise}
Apply Theorem~\ref{thm:missing} to $\R^2$.
\end{exercise}
"""

CH2 = r"""\chapter{More}
\section{Problems}
\begin{algorithm}[H]
\caption{Bisection}\label{alg:bisect}
Halve $[a, b]$ while $b - a > \varepsilon$.
\end{algorithm}
\begin{exercise}
Prove Lemma~\ref{lem:b} directly, then run Algorithm~\ref{alg:bisect}.
\end{exercise}
\exsol{Combine \propref{prop:a} with $\R$.}
"""


def write_book(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def book(tmp_path: Path) -> Path:
    return write_book(tmp_path / "normbook", {"main.tex": MAIN, "ch1.tex": CH1, "ch2.tex": CH2})


def node(tree: ExpansionNode, *path: str) -> ExpansionNode:
    for label in path:
        tree = next(c for c in tree.children if c.label == label)
    return tree


def test_newtheorem_environments_become_labelled_statements_of_their_kind(book: Path) -> None:
    items = {i.label: i for i in extract_textbook(book).items}
    assert items["def:norm"].kind == "definition"
    assert items["def:norm"].title == "Norm"
    assert items["prop:a"].kind == "proposition"
    assert items["lem:b"].kind == "lemma"
    assert items["thm:deep"].kind == "theorem"
    # \newtheorem{prop}[thm]: one counter shared, numbered within the chapter
    assert [items[k].number for k in ("prop:a", "lem:b", "thm:deep")] == ["1.1", "1.2", "1.3"]
    assert items["def:norm"].number == "1.1"
    assert items["alg:bisect"].kind == "algorithm"
    assert "\\caption{Bisection}" in items["alg:bisect"].text
    assert items["eq:tri"].kind == "equation"
    assert items["eq:tri"].number == "1.1"
    assert items["def:norm"].section == "Norms / Basics"
    assert items["def:norm"].source_file == "ch1.tex"
    assert items["def:norm"].line == 3
    assert "a remark" not in items["def:norm"].text  # comments are dropped


def test_macros_the_book_defines_are_expanded_with_their_arguments(book: Path) -> None:
    items = {i.label: i for i in extract_textbook(book).items}
    assert "$\\mathbb{R}^n$" in items["def:norm"].text
    assert "\\lVert \\cdot \\rVert" in items["def:norm"].text
    # optional first argument with its default, and given
    assert "(x_1,\\dots,x_n)" in items["thm:deep"].text
    assert "(y_1,\\dots,y_3)" in items["thm:deep"].text
    exercise = items["ex:one"]
    assert "\\lvert x\\rvert" in exercise.text  # \def with a parameter
    assert "Proposition~\\ref*{prop:a}" in exercise.text  # a reference macro, expanded


def test_references_through_a_macro_and_eqref_resolve(book: Path) -> None:
    ext = extract_textbook(book)
    items = {i.label: i for i in ext.items}
    refs = {r.key: r for r in items["ex:one"].refs}
    assert refs["prop:a"].raw == "\\ref*{prop:a}"  # seen through the \propref macro
    assert refs["prop:a"].resolved and refs["prop:a"].kind == "proposition"
    assert refs["thm:deep"].raw == "\\cref{thm:deep}"
    eq = next(r for r in items["prop:a"].refs if r.key == "eq:tri")
    assert eq.resolved and eq.kind == "equation"
    first = ext.exercises[0]
    assert node(first.expansion, "prop:a", "eq:tri").text.startswith("\\begin{equation}")


def test_exercises_inside_chapter_files_in_book_order_with_solution(book: Path) -> None:
    ext = extract_textbook(book)
    assert [e.id for e in ext.exercises] == ["normbook/1.2.1", "normbook/1.2.2", "normbook/2.1.1"]
    first = ext.exercises[0]
    assert first.source_idx == "Exercise 1.2.1"
    assert first.section == "Norms / Exercises"
    assert first.source == "normbook/Exercises"
    assert first.solution == "Check the axioms of Definition~\\ref{def:norm}."
    assert ext.exercises[1].solution is None  # the next exercise's \exsol is not its
    assert ext.exercises[2].solution == "Combine Proposition~\\ref*{prop:a} with $\\mathbb{R}$."
    assert ext.stats["exercises"] == 3
    assert ext.stats["with_solution"] == 2


def test_algorithm_reference_expands(book: Path) -> None:
    third = extract_textbook(book).exercises[2]
    assert [c.label for c in third.expansion.children] == ["lem:b", "alg:bisect"]
    assert node(third.expansion, "alg:bisect").text.endswith("b - a > \\varepsilon$.")


def test_undefined_reference_is_recorded_never_invented(book: Path) -> None:
    ext = extract_textbook(book)
    second = ext.exercises[1]
    assert [(r.key, r.resolved) for r in second.refs] == [("thm:missing", False)]
    assert second.expansion.unresolved == ["thm:missing"]
    assert second.expansion.children == []
    assert "thm:missing" not in {i.label for i in ext.items}
    assert ext.stats["references"] == 5
    assert ext.stats["resolved_references"] == 4
    assert ext.stats["unresolved_references"] == 1


def test_cycle_guard_stops_a_to_b_to_a(book: Path) -> None:
    tree = extract_textbook(book).exercises[0].expansion
    a = node(tree, "prop:a")
    b = node(a, "lem:b")
    assert (a.depth, b.depth) == (1, 2)
    assert (b.parent, b.via) == ("prop:a", "\\ref{lem:b}")
    assert b.truncated == ["prop:a"]  # back to A: on the path, not followed again
    assert b.children == []


def test_depth_budget_truncates_and_records_the_left_out_key(book: Path) -> None:
    deep2 = extract_textbook(book, depth=2).exercises[0].expansion
    deeper = node(deep2, "thm:deep", "thm:deeper")
    assert deeper.depth == 2
    assert deeper.children == [] and deeper.truncated == ["thm:deepest"]
    deep3 = extract_textbook(book, depth=3).exercises[0].expansion
    deepest = node(deep3, "thm:deep", "thm:deeper", "thm:deepest")
    assert deepest.depth == 3 and deepest.truncated == ["def:norm"]
    assert extract_textbook(book, depth=0).exercises[0].expansion.truncated == [
        "prop:a",
        "thm:deep",
    ]


def test_pattern_and_limit_select_exercises(book: Path) -> None:
    assert [e.id for e in extract_textbook(book, pattern="*2.1.1").exercises] == ["normbook/2.1.1"]
    assert [e.id for e in extract_textbook(book, pattern="ch1.tex").exercises] == [
        "normbook/1.2.1",
        "normbook/1.2.2",
    ]
    limited = extract_textbook(book, limit=1)
    assert [e.id for e in limited.exercises] == ["normbook/1.2.1"]
    assert limited.stats["exercises"] == 1  # the selection's counts
    assert limited.stats["references"] == 2 and limited.stats["unresolved_references"] == 0
    assert limited.stats["book_exercises"] == 3  # and the book's
    assert limited.stats["book_unresolved_references"] == 1


def test_archives_read_like_the_folder(book: Path, tmp_path: Path) -> None:
    tgz = tmp_path / "normbook.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(book, arcname="normbook")
    zpath = tmp_path / "normbook.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for f in book.iterdir():
            zf.write(f, f"normbook/{f.name}")
    folder = extract_textbook(book)
    for archive in (tgz, zpath):
        ext = extract_textbook(archive)
        assert ext.stats == folder.stats
        assert [e.id for e in ext.exercises] == [e.id for e in folder.exercises]


def test_without_a_main_file_every_tex_file_is_read_in_natural_order(tmp_path: Path) -> None:
    root = write_book(
        tmp_path / "notes",
        {
            "ch10.tex": "\\section{Ten}\\begin{exercise}Ten.\\end{exercise}",
            "ch2.tex": "\\section{Two}\\begin{exercise}Two.\\end{exercise}",
        },
    )
    ext = extract_textbook(root)
    assert [e.text for e in ext.exercises] == ["Two.", "Ten."]


def test_labels_of_parts_resolve_to_their_statement(tmp_path: Path) -> None:
    root = write_book(
        tmp_path / "parts",
        {
            "book.tex": "\\documentclass{article}\\newtheorem{thm}{Theorem}\n"
            "\\newcommand{\\thmref}[1]{\\hyperref[#1]{Theorem~\\ref*{#1}}}\\begin{document}\n"
            "\\begin{thm}\\label{thm:two}\\begin{enumerate}\\item\\label{thm:two:a} $a$"
            "\\end{enumerate}\\begin{align}x\\label{eq:x}\\end{align}\\end{thm}\n"
            "\\begin{thm}\\begin{enumerate}\\item\\label{thm:p:i} $b$\\end{enumerate}\\end{thm}\n"
            "\\begin{exercise}Use part \\ref{thm:two:a} and \\eqref{eq:x}, "
            "then \\hyperref[thm:p:i]{that part}.\\end{exercise}\n"
            "\\begin{exercise}By \\thmref{thm:two}.\\end{exercise}\n"
            "\\end{document}\n",
        },
    )
    ext = extract_textbook(root)
    items = {i.label: i for i in ext.items}
    assert items["thm:two:a"].kind == "theorem" and items["thm:two:a"].text == items["thm:two"].text
    assert items["eq:x"].kind == "equation" and items["eq:x"].number == "1"
    assert items["thm:two"].number == "1"
    assert ext.stats["unresolved_references"] == 0
    assert [c.label for c in ext.exercises[0].expansion.children] == [
        "thm:two:a",
        "eq:x",
        "thm:p:i",  # an unlabelled theorem whose part is labelled: named by the part
    ]
    assert items["thm:p:i"].number == "2"
    assert ext.exercises[0].refs[-1].raw == "\\hyperref[thm:p:i]{that part}"
    # a macro wrapping \ref* in \hyperref makes one reference, not two
    assert [r.raw for r in ext.exercises[1].refs] == [
        "\\hyperref[thm:two]{Theorem~\\ref*{thm:two}}"
    ]


def test_declared_exercise_environment_multi_key_cref_and_escaped_percent(tmp_path: Path) -> None:
    root = write_book(
        tmp_path / "art",
        {
            "paper.tex": "\\documentclass{article}\n\\newtheorem{exer}{Exercise}[section]\n"
            "\\newtheorem{lemma}{Lemma}\n\\begin{document}\n\\section{One}\n"
            "\\begin{lemma}\\label{l1}A\\end{lemma}\\begin{lemma}\\label{l2}B\\end{lemma}\n"
            "\\begin{exer}[Rates]\\label{ex:r}Grow by 5\\% using \\cref{l1,l2}. % not this\n"
            "\\end{exer}\n\\end{document}\n",
        },
    )
    ext = extract_textbook(root)
    (exercise,) = ext.exercises
    assert exercise.id == "paper/1.1" and exercise.source_idx == "Exercise 1.1"
    assert exercise.text == "\\label{ex:r}Grow by 5\\% using \\cref{l1,l2}."  # labels kept
    assert [(r.key, r.raw) for r in exercise.refs] == [
        ("l1", "\\cref{l1,l2}"),
        ("l2", "\\cref{l1,l2}"),
    ]
    assert [c.label for c in exercise.expansion.children] == ["l1", "l2"]
    assert next(i for i in ext.items if i.label == "ex:r").title == "Rates"


def test_macro_expansion_unit() -> None:
    defs = collect_macros(
        r"\newcommand{\vect}[1]{\mathbf{#1}}\newcommand*{\bb}[1]{{\bf#1}}"
        r"\DeclareMathOperator{\rank}{rank}\newcommand{\loop}{\loop}"
        r"\newcommand{\hyper}[1]{\label{#1}x}"
    )
    table = macro_table(defs, keep=())
    assert "hyper" not in table  # programs TeX: left as written
    assert expand(r"$\vect{v} + \vect w$", table) == r"$\mathbf{v} + \mathbf{w}$"
    assert expand(r"\bb{b}", table) == r"{\bf b}"
    assert expand(r"\rank A", table) == r"\operatorname{rank} A"
    assert expand(r"\loop", table).startswith(r"\loop")  # a self-reference terminates


# ------------------------------------------------------------------------------- Markdown
MD = """# Chapter 1. Vector spaces

## 1.1 Bases

**Definition 1.1** (Basis). A set $B$ is a basis of $V$ when it is independent and spans $V$.

**Theorem 3** (Dimension). Any two bases of $V$ have the same size, by Definition 1.1.

Proof. Exchange the elements one by one, by Theorem 3 itself.

Theorem 3 shows that dimension is well defined (narrative, not a new item).

**Exercise 1.2.** Show that $\\{e_1, e_2\\}$ is a basis of $\\mathbb{R}^2$ (Theorem 3, Lemma 9).

$$ x + y = 1 \\label{eq:line} $$

**Solution.** Check independence.

## 1.2 More

### Exercise

Prove \\eqref{eq:line} has infinitely many solutions.
"""


def test_markdown_reader_items_references_and_solutions(tmp_path: Path) -> None:
    root = write_book(tmp_path / "mdbook", {"01-spaces.md": MD})
    ext = extract_textbook(root)
    assert ext.conventions == "markdown"
    assert ext.stats["duplicate_labels"] == 0 and ext.stats["items_theorem"] == 1
    items = {i.label: i for i in ext.items}
    assert items["theorem:3"].title == "Dimension"
    assert items["theorem:3"].section == "Chapter 1. Vector spaces / 1.1 Bases"
    assert "Exchange" not in items["theorem:3"].text  # the proof is not the statement
    assert [(r.key, r.resolved) for r in items["theorem:3"].refs] == [("definition:1.1", True)]
    first, second = ext.exercises
    assert first.id == "mdbook/1.2" and first.source_idx == "Exercise 1.2"
    assert first.solution == "Check independence."
    assert [(r.key, r.resolved) for r in first.refs] == [("theorem:3", True), ("lemma:9", False)]
    assert first.expansion.unresolved == ["lemma:9"]
    assert node(first.expansion, "theorem:3", "definition:1.1").depth == 2
    assert second.id == "mdbook/01-spaces-1"
    assert second.section.endswith("1.2 More")
    assert node(second.expansion, "eq:line").text == "$$ x + y = 1 \\label{eq:line} $$"


# ------------------------------------------------------------------------------- bad input
def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder") as err:
        extract_textbook(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(err.value)


def test_a_file_that_is_not_an_archive(tmp_path: Path) -> None:
    plain = tmp_path / "book.pdf"
    plain.write_bytes(b"%PDF-1.4")
    with pytest.raises(InputError, match="not a folder nor a .tar.gz/.tgz/.zip archive"):
        extract_textbook(plain)
    fake = tmp_path / "book.tar.gz"
    fake.write_bytes(b"this is not gzip")
    with pytest.raises(InputError, match="book.tar.gz: not a readable archive"):
        extract_textbook(fake)


def test_no_tex_files(tmp_path: Path) -> None:
    write_book(tmp_path / "empty", {"README.txt": "nothing here"})
    with pytest.raises(FormalbenchError, match="no .tex or .md files"):
        extract_textbook(tmp_path / "empty")


def test_undecodable_bytes_name_the_file(tmp_path: Path) -> None:
    root = write_book(tmp_path / "bad", {"main.tex": MAIN, "ch2.tex": CH2})
    (root / "ch1.tex").write_bytes(b"\\chapter{Caf\xe9}\n")
    with pytest.raises(InputError, match=r"ch1.tex: not UTF-8 text"):
        extract_textbook(root)


def test_archive_member_escaping_the_folder_is_refused(tmp_path: Path) -> None:
    zpath = tmp_path / "evil.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("../outside.tex", "x")
    with pytest.raises(InputError, match="outside the archive"):
        extract_textbook(zpath)
    assert not (tmp_path / "outside.tex").exists()


def test_bad_options_and_conventions(book: Path) -> None:
    with pytest.raises(InputError, match="depth"):
        extract_textbook(book, depth=-1)
    with pytest.raises(InputError, match="unknown LaTeX conventions 'nope'"):
        extract_textbook(book, conventions="nope")
    assert extract_textbook(book, conventions="general").conventions == "general"


def test_tar_without_gzip_is_not_readable(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        data = b"x"
        info = tarfile.TarInfo("a.tex")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    (tmp_path / "plain.tgz").write_bytes(buf.getvalue())
    with pytest.raises(InputError, match="plain.tgz: not a readable archive"):
        extract_textbook(tmp_path / "plain.tgz")
