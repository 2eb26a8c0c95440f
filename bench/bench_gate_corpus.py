"""What the gate's character and option rules refuse in real code (false refusals).

Runs `core.gate.unsafe_commands` over every `.v` of the installed Coq (`coqc -where`'s
`theories` and `user-contrib`, read in place, never compiled) and every `.v`, `.lean` and
JSONL text field of ../shared/data and ../shared/fixtures, and prints how many texts were
read and, per refused character (`U+XXXX`) or option (`option …`), how many refusals and the
first place. The figures in docs/decisions.md ("Gate in `core` …") come from it.

    python bench/bench_gate_corpus.py
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formalbench.core.gate import unsafe_commands  # noqa: E402
from formalbench.core.records import Language  # noqa: E402
from tests.shared_data import DATA, FIXTURES  # noqa: E402 (the one place data is found)

FIELDS = ("formal", "header", "formal_statement", "statement", "proof", "code", "lean4_file")


def _roots() -> list[Path]:
    roots = [DATA, FIXTURES]  # absent without the public data: only coqc's sources are read
    if shutil.which("coqc"):
        where = Path(
            subprocess.run(["coqc", "-where"], capture_output=True, text=True).stdout.strip()
        )
        roots[:0] = [where / "theories", where / "user-contrib"]
    return [r for r in roots if r.is_dir()]


def _texts(root: Path) -> Iterator[tuple[str, str, Language]]:
    for path in sorted(root.rglob("*")):
        if path.suffix in (".v", ".lean") and path.is_file():
            language = Language.lean if path.suffix == ".lean" else Language.coq
            yield str(path), path.read_text(encoding="utf-8", errors="replace"), language
        elif path.suffix == ".jsonl" and path.is_file():
            language = Language.lean if "lean" in str(path).lower() else Language.coq
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                for key in FIELDS:
                    if isinstance(record, dict) and isinstance(record.get(key), str):
                        yield f"{path}:{n}:{key}", record[key], language


def main() -> int:
    read = 0
    counts: collections.Counter[str] = collections.Counter()
    first: dict[str, str] = {}
    for root in _roots():
        for where, text, language in _texts(root):
            read += 1
            for unsafe in unsafe_commands(text, language):
                if unsafe.command.startswith(("U+", "option ")):
                    counts[unsafe.command] += 1
                    first.setdefault(unsafe.command, f"{where} line {unsafe.line}")
    print(f"texts read: {read}")
    for command, count in counts.most_common():
        print(f"  {command}: {count} (first: {first[command]})")
    print(f"refused by the character and option rules: {sum(counts.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
