"""The block-structured file of an exercise: scaffold, immutable block comments, frozen prefix.

A file is the scaffold header (imports), then, per formal block in index order, its block
comment on a line of its own and the block's code. While block b is worked on, everything up
to and including b's comment is the *frozen prefix*: it is built once from the blocks already
accepted and every candidate file for b is `prefix + code`, checked mechanically
(`assert_frozen`) before each compile, so no repair or rewrite can touch an earlier block.

The text checks here run before the assistant and their findings are fed back like compiler
errors: no imports inside a block (the scaffold has them), no block comment written by the
model (they belong to the orchestrator), nothing the strict verifier forbids but holes, and
holes only in theorem proofs — a theorem block must leave every theorem it states open, any
other block may leave nothing open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from formalbench.checking.decls import split_decls
from formalbench.checking.forbidden import forbidden_findings
from formalbench.checking.holes import hole_decls
from formalbench.core.config import VerifierPolicy
from formalbench.core.lexer import tokenize
from formalbench.core.records import Diagnostic, Language, Severity
from formalbench.pipelines.construct.block_records import Block, BlockKind
from formalbench.solvers.extract import code_blocks


@dataclass(frozen=True)
class Syntax:
    """How one assistant writes what the block file needs."""

    language: Language
    name: str  # as prompts say it
    fence: str
    tags: frozenset[str]
    comment: tuple[str, str]
    hole: str  # how a theorem's proof is left open, as prompts say it
    hole_words: frozenset[str]
    theorem_kinds: frozenset[str]  # declaration kinds (as split_decls names them) that state
    imports: frozenset[str]  # words that open an import command
    header: str  # the default scaffold

    def block_comment(self, block: Block) -> str:
        left, right = self.comment
        return f"{left} [BLOCK {block.source_idx} | {block.index} | {block.kind.value}] {right}"


SYNTAX: dict[Language, Syntax] = {
    Language.coq: Syntax(
        Language.coq,
        "Coq (standard library)",
        "coq",
        frozenset({"coq", "rocq", "v", "gallina"}),
        ("(*", "*)"),
        "`Proof.` then `Admitted.`",
        frozenset({"Admitted", "admit"}),
        frozenset({"Theorem"}),
        frozenset({"Require", "Import", "Export", "From"}),
        "From Coq Require Import Arith ZArith Reals Lia Lra List.\nImport ListNotations.\n",
    ),
    Language.lean: Syntax(
        Language.lean,
        "Lean 4 with Mathlib",
        "lean",
        frozenset({"lean", "lean4"}),
        ("/-", "-/"),
        "`:= by sorry`",
        frozenset({"sorry", "admit"}),
        frozenset({"theorem"}),
        frozenset({"import"}),
        "import Mathlib\n",
    ),
}
_MARKER = re.compile(r"\[\s*BLOCK\b")


class FormatProblem(ValueError):
    """The reply holds no code for the block; the message says why."""


class FrozenPrefixViolation(RuntimeError):
    """A candidate file does not start with the frozen prefix: a bug of the orchestrator."""


@dataclass
class BlockFile:
    """The accepted part of an exercise's file, and candidate files for the next block."""

    syntax: Syntax
    header: str
    parts: list[tuple[Block, str]]  # accepted blocks with their code, in order

    @classmethod
    def start(cls, syntax: Syntax, header: str | None = None) -> BlockFile:
        text = syntax.header if header is None else header
        return cls(syntax, text if text.endswith("\n") or not text else text + "\n", [])

    @property
    def text(self) -> str:
        return self.header + "".join(self._part(b, c) for b, c in self.parts)

    def _part(self, block: Block, code: str) -> str:
        body = code if code.endswith("\n") else code + "\n"
        return f"\n{self.syntax.block_comment(block)}\n{body}"

    def prefix(self, block: Block) -> str:
        """The frozen text before `block`'s code: accepted blocks and `block`'s comment."""
        return f"{self.text}\n{self.syntax.block_comment(block)}\n"

    def candidate(self, prefix: str, code: str) -> str:
        text = prefix + (code if code.endswith("\n") else code + "\n")
        assert_frozen(prefix, text)
        return text

    def freeze(self, block: Block, code: str) -> None:
        self.parts.append((block, code))

    def body_start_line(self, block: Block) -> int:
        """The file line on which `block`'s code starts (1-based)."""
        return self.prefix(block).count("\n") + 1


def assert_frozen(prefix: str, text: str) -> None:
    """The mechanical check that only the current block changed."""
    if not text.startswith(prefix):
        raise FrozenPrefixViolation("a candidate file changed the frozen prefix")


def extract_code(reply: str, syntax: Syntax, block: Block) -> str:
    """The block's code from a model reply: the last fenced block in the assistant's
    language (or untagged); text from an echoed block comment of this block on."""
    blocks = [b for b in code_blocks(reply) if b.tag in syntax.tags or not b.tag]
    if not blocks:
        other = code_blocks(reply)
        if other:
            raise FormatProblem(f"the code block is not tagged `{syntax.fence}`")
        raise FormatProblem(f"the answer has no `{syntax.fence}` code block")
    code = blocks[-1].body
    marker = syntax.block_comment(block)
    if marker in code:
        code = code.split(marker, 1)[1]
    code = code.strip("\n")
    if not code.strip():
        raise FormatProblem("the code block is empty")
    return code + "\n"


def block_problems(code: str, kind: BlockKind, syntax: Syntax) -> list[Diagnostic]:
    """Text-level errors of a block's code (lines relative to the block)."""
    language = syntax.language
    tokens = tokenize(code, language, comments=True)
    found: list[Diagnostic] = []
    for tok in tokens:
        if tok.is_comment and _MARKER.search(tok.text):
            found.append(
                _error("block comments belong to the pipeline: do not write one", tok.line)
            )
    decls = split_decls(code, language, [t for t in tokens if not t.is_comment])
    if not decls:
        return [*found, _error("the block declares nothing", None)]
    for d in decls:
        if d.tokens[d.head].text in syntax.imports:
            found.append(
                _error(
                    "imports belong to the file header, which is fixed: remove this line", d.line
                )
            )
    allowed = [w for w in VerifierPolicy().forbidden_for(language) if w not in syntax.hole_words]
    for f in forbidden_findings(decls, allowed, language=language):
        found.append(
            _error(f"`{f.subject}` is not allowed: state assumptions inside the theorem", f.line)
        )
    decls, holed = hole_decls(code, language)
    theorems = [d for d in decls if d.kind in syntax.theorem_kinds]
    for d in decls:
        if d.index in holed and (kind is not BlockKind.thm or d.kind not in syntax.theorem_kinds):
            found.append(
                _error(
                    f"`{d.name or d.kind}` is left unfinished: only theorem proofs of the theorem "
                    "block may be holes; give the definition in full",
                    d.line,
                )
            )
    if kind is BlockKind.thm:
        if not theorems:
            found.append(_error("a theorem block must state a theorem", None))
        for d in theorems:
            if d.index not in holed:
                found.append(
                    _error(
                        f"leave the proof of `{d.name}` open with {syntax.hole}: the statement "
                        "is the task, its proof is the prover's job",
                        d.line,
                    )
                )
    return found


def hole_count(text: str, syntax: Syntax) -> tuple[int, list[str]]:
    """How many declarations of `text` hold a hole, and the names of those declarations."""
    decls, holed = hole_decls(text, syntax.language)
    names = [d.name or f"#{d.index}" for d in decls if d.index in holed]
    return len(names), names


def relative(diagnostics: list[Diagnostic], start_line: int) -> list[Diagnostic]:
    """File diagnostics with lines counted from the block's first line."""
    out: list[Diagnostic] = []
    for d in diagnostics:
        if d.line is None:
            out.append(d)
            continue
        shift = start_line - 1
        end = d.end_line - shift if d.end_line is not None else None
        out.append(d.model_copy(update={"line": d.line - shift, "end_line": end}))
    return out


def describe(diagnostics: list[Diagnostic], code: str, limit: int = 8) -> str:
    """Errors as a model should read them: block line, message, and the offending line."""
    lines = code.splitlines()
    errors = [d for d in diagnostics if d.severity == Severity.error] or diagnostics
    out: list[str] = []
    for d in errors[:limit]:
        if d.line is not None and d.line < 1:
            head = "in the frozen context: "
        elif d.line is not None:
            head = f"line {d.line}: "
        else:
            head = ""
        out.append(f"- {head}{d.message.strip()}")
        if d.line is not None and 1 <= d.line <= len(lines) and lines[d.line - 1].strip():
            out.append(f"    at: {lines[d.line - 1].strip()}")
    if len(errors) > limit:
        out.append(f"- ... and {len(errors) - limit} more")
    return "\n".join(out) or "- the check failed without a message"


def signature(diagnostics: list[Diagnostic]) -> str:
    """A short, position-free signature of the first error (for repair histories)."""
    errors = [d for d in diagnostics if d.severity == Severity.error]
    if not errors:
        return ""
    text = re.sub(r"\d+", "N", " ".join(errors[0].message.split()))
    return text[:160]


def _error(message: str, line: int | None) -> Diagnostic:
    return Diagnostic(severity=Severity.error, message=message, line=line, kind="construct")
