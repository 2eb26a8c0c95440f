"""A stand-in for the Lean REPL process, for tests only (no Lean toolchain can run here).

It speaks the REPL's protocol on stdin/stdout the way the real one does (lines glued together
up to a blank line; pretty JSON replies each followed by a blank line; an unparsable request
kills it) and answers by replaying the real recorded sessions in the data folder's fixtures/lean-repl:
a `cmd` that was recorded gets its recorded reply (positions moved down by any blank or
comment lines before it, "env" renumbered by this process); any other `cmd` compiles cleanly. It keeps its
own environment numbers and refuses unknown ones like the REPL ("Unknown environment.").

`#print axioms NAME` lines at the end of a cmd are answered with an information message
(configurable: --axioms, or `fake:axioms=a,b` in the cmd; "none" for no axioms); a NAME that
does not occur in the rest of the cmd gets an "unknown constant" error. The verifier's identity
queries (`set_option pp.all true in ... #check @_root_.NAME` / `#print _root_.NAME`) at the end
are answered with the declaration's signature made into a type (see `_query_answer`); a
`#print` of a def, abbrev or instance also shows its value text, as Lean's does.

Magic text in a cmd makes it misbehave: `fake:hang` (never answers), `fake:sleep=S`,
`fake:crash` (stack-overflow message on stderr, then abort), `fake:grow=MB` (keeps MB of
resident memory), `fake:noise` (non-JSON text on stdout before the reply), `fake:error-here`
(an error message at the position of the marker), `fake:info=TEXT` (an information message
TEXT, `~` standing for a blank, at the marker's line: what a probe's `trace` prints), `fake:write=NAME` (writes the file NAME,
relative to its working directory, as code run while elaborating could), `fake:whoami` (an
information message whose text is JSON: its working directory and environment). With
`--json FILE` it acts as `lean --json FILE` instead (one message a line, exit code 1 on
errors). --log FILE records every request as a JSON line with this process's pid and working
directory, so tests can count header elaborations and restarts; --report-time adds
`standin_s` (its own time per request) to each reply, for the bench.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

# The data folder tests/conftest.py resolved (exported to the processes tests start).
DEFAULT_FIXTURES = (
    Path(os.environ.get("FORMALBENCH_TEST_DATA", "/nonexistent")) / "fixtures" / "lean-repl"
)
_PRINT = re.compile(r"^#print axioms (\S+)\s*$")
# The verifier's identity queries (checking/lean_identity.py): pp options, then one command.
_QUERY = re.compile(
    r"^(?P<opts>(?:set_option \S+ \S+ in )*)#(?P<cmd>check @|print )(?P<name>_root_\.\S+)\s*$"
)
_DECL = r"(?:^|\n)[ \t]*(?:@\[[^\]]*\][ \t]*)*(?:(?:private|protected|public|noncomputable)[ \t]+)*(?P<kw>theorem|lemma|def|abbrev|instance|structure)[ \t]+{name}(?![\w.'])"
_HOLD: list[bytearray] = []  # memory grown on request stays referenced here


def read_requests(text: str) -> list[str]:
    """The queries of a recorded .in file, glued the REPL's way (independent of the backend)."""
    queries, pending = [], []
    for line in text.split("\n") + [""]:
        if line.strip():
            pending.append(line.rstrip())
        elif pending:
            queries.append("".join(pending))
            pending = []
    return queries


@functools.lru_cache(maxsize=4)
def load_recordings(folder: Path) -> dict[str, dict[str, Any]]:
    """cmd text -> the recorded reply (first occurrence) over every fixture pair in `folder`."""
    table: dict[str, dict[str, Any]] = {}
    for request_file in sorted(folder.rglob("*.in")):
        reply_file = request_file.with_name(request_file.stem + ".expected.out")
        if not reply_file.exists():
            continue
        queries = read_requests(request_file.read_text(encoding="utf-8"))
        replies = [
            json.loads(chunk)
            for chunk in reply_file.read_text(encoding="utf-8").split("\n\n")
            if chunk.strip()
        ]
        for query, reply in zip(queries, replies, strict=False):
            request = json.loads(query)
            if "cmd" in request and "env" in reply:
                table.setdefault(request["cmd"], reply)
    return table


def directives(cmd: str) -> dict[str, str]:
    """The `fake:NAME` / `fake:NAME=VALUE` markers in a cmd."""
    return {m[1]: m[2] or "" for m in re.finditer(r"fake:([a-z-]+)(?:=([^\s]+))?", cmd)}


def _moved(entry: dict[str, Any], lines: int) -> dict[str, Any]:
    for key in ("pos", "endPos"):
        pos = entry.get(key)
        if isinstance(pos, dict) and pos.get("line"):
            pos["line"] += lines
    return entry


class Replayer:
    """The REPL's answers without the process around it (shared with the Kimina stand-in)."""

    def __init__(self, fixtures: Path = DEFAULT_FIXTURES, axioms: str = "") -> None:
        self.table = load_recordings(fixtures)
        self.axioms = axioms
        self.envs = 0

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if "cmd" not in request:
            return {"message": "the stand-in answers only cmd requests"}
        env = request.get("env")
        if env is not None and not (isinstance(env, int) and 0 <= env < self.envs):
            return {"message": "Unknown environment."}
        lines = request["cmd"].split("\n")
        targets: list[tuple[int, str]] = []
        queries: list[tuple[int, re.Match[str]]] = []
        while lines and (
            not lines[-1].strip() or _PRINT.match(lines[-1]) or _QUERY.match(lines[-1])
        ):
            text = lines.pop()
            if match := _PRINT.match(text):
                targets.insert(0, (len(lines) + 1, match[1].removeprefix("_root_.")))
            elif query := _QUERY.match(text):
                queries.insert(0, (len(lines) + 1, query))
        base = "\n".join(lines)
        lead = 0  # leading blank and `--` comment lines only move the recorded positions down
        while lead < len(lines) and (not lines[lead].strip() or lines[lead].startswith("--")):
            lead += 1
        reply = copy.deepcopy(self.table.get("\n".join(lines[lead:]), {}))
        for entry in reply.get("messages", []) + reply.get("sorries", []):
            _moved(entry, lead)
        messages = reply.setdefault("messages", [])
        marks = directives(base)
        if "whoami" in marks:
            me = {"cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()}
            at = {"line": 1, "column": 0}
            messages.append({"severity": "info", "pos": at, "endPos": at, "data": json.dumps(me)})
        if "error-here" in marks:
            for number, text in enumerate(lines, start=1):
                if (column := text.find("fake:error-here")) >= 0:
                    at = {"line": number, "column": column}
                    messages.append(
                        {"severity": "error", "pos": at, "endPos": at, "data": "fake error"}
                    )
        for number, text in enumerate(lines, start=1):
            for info in re.findall(r"fake:info=(\S+)", text):
                at = {"line": number, "column": 0}
                data = info.replace("~", " ")
                messages.append({"severity": "info", "pos": at, "endPos": at, "data": data})
        axioms = marks.get("axioms", self.axioms)
        for number, name in targets:
            at = {"line": number, "column": 0}
            end = {"line": number, "column": 14 + len(name)}
            if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", base):
                text, severity = f"Unknown constant `{name}`", "error"
            elif axioms in ("", "none"):
                text, severity = f"'{name}' does not depend on any axioms", "info"
            else:
                listed = ", ".join(axioms.split(","))
                text, severity = f"'{name}' depends on axioms: [{listed}]", "info"
            messages.append({"severity": severity, "pos": at, "endPos": end, "data": text})
        for number, query in queries:
            messages.append(_query_answer(base, number, query))
        if not messages:
            del reply["messages"]
        reply["env"] = self.envs
        self.envs += 1
        return reply


def _signature(text: str) -> tuple[str, str]:
    """(binders, type) of a declaration's text after its name, up to its `:=` (layout dropped)."""
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        depth += ch in "([{⟨"
        depth -= ch in ")]}⟩"
        if depth == 0 and text.startswith(":=", i):
            cut = i
            break
    sig = " ".join(text[:cut].split())
    depth = 0
    for i, ch in enumerate(sig):
        depth += ch in "([{⟨"
        depth -= ch in ")]}⟩"
        if depth == 0 and ch == ":" and not sig.startswith(":=", i):
            return sig[:i].strip(), sig[i + 1 :].strip()
    return sig, ""


def _query_answer(base: str, number: int, query: re.Match[str]) -> dict[str, Any]:
    """The answer to an identity query, shaped as the REPL's `#check`/`#print` info messages.

    The stand-in cannot elaborate, so the type it prints is the declaration's own text made
    into a `∀` (the last declaration of that name before the query); tests that need another
    answer put `fake:type=NAME=TEXT` (underscores for blanks) in the cmd."""
    name = query["name"].removeprefix("_root_.")
    column = len(query["opts"])
    at, end = {"line": number, "column": column}, {"line": number, "column": column + 6}
    forced = {k: v for k, _, v in (m.partition("=") for m in
              re.findall(r"fake:type=(\S+)", base))}  # fmt: skip
    short = name.rsplit(".", 1)[-1]
    found = list(re.finditer(_DECL.format(name=re.escape(short)), base))
    if not found:
        text = f"Unknown identifier `{query['name']}`"
        return {"severity": "error", "pos": at, "endPos": end, "data": text}
    decl = found[-1]
    binders, type_ = _signature(base[decl.end() :])
    if name in forced:
        binders, type_ = "", forced[name].replace("_", " ")
    if query["cmd"].startswith("check"):
        data = f"@{name} : " + (f"∀ {binders}, {type_}" if binders else type_)
    else:
        data = f"{decl['kw']} {name} {binders} : {type_}".replace("  ", " ")
        value = _value(base[decl.end() :])
        if value and decl["kw"] in ("def", "abbrev", "instance"):
            data += f" :=\n{value}"  # as Lean's `#print` shows a definition's value
    return {"severity": "info", "pos": at, "endPos": end, "data": data}


def _value(text: str) -> str:
    """A declaration's value text after its top-level `:=`, up to the next command (layout
    collapsed), or "" when it has none."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{⟨"
        depth -= ch in ")]}⟩"
        if depth == 0 and text.startswith(":=", i):
            rest = re.split(r"\n(?=\S)", text[i + 2 :].lstrip(" \t"), maxsplit=1)[0]
            return " ".join(rest.split())
    return ""


def _misbehave(marks: dict[str, str], out: Any, crash_stream: Any = None) -> None:
    if "crash" in marks:
        stream = crash_stream or sys.stderr.buffer
        stream.write(b"Stack overflow detected. Aborting.\n")
        stream.flush()
        os.abort()
    if "write" in marks:
        Path(marks["write"]).write_text("written while elaborating\n", encoding="utf-8")
    if "grow" in marks:
        block = bytearray(int(float(marks["grow"]) * 1024 * 1024))
        for i in range(0, len(block), 4096):
            block[i] = 1  # touch every page so it is resident
        _HOLD.append(block)
    if "sleep" in marks:
        time.sleep(float(marks["sleep"]))
    if "hang" in marks:
        while True:
            time.sleep(3600)
    if "noise" in marks:
        out.write(b"Processing incremental state [pos: 0..0]:\n\n{not json}\n\n")


def lean_json(path: str, replayer: Replayer) -> int:
    """Act as `lean --json FILE`: one SerialMessage JSON line per message; exit 1 on errors."""
    text = Path(path).read_text(encoding="utf-8")
    out = sys.stdout.buffer
    _misbehave(directives(text), out, crash_stream=out)
    reply = replayer.answer({"cmd": text})
    code = 0
    for message in reply.get("messages", []):
        severity = {"info": "information"}.get(message["severity"], message["severity"])
        line = {"fileName": path, "pos": message["pos"], "endPos": message.get("endPos")}
        line |= {"severity": severity, "data": message["data"], "caption": ""}
        if message["data"].startswith("declaration uses"):
            line["kind"] = "hasSorry"
        code = 1 if severity == "error" else code
        out.write(json.dumps(line, ensure_ascii=False).encode() + b"\n")
    out.flush()
    return code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--axioms", default="propext,Classical.choice,Quot.sound")
    parser.add_argument("--import-delay", type=float, default=0.0)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--report-time", action="store_true", help="add its own time to replies")
    parser.add_argument("--json", metavar="FILE", help="act as `lean --json FILE` instead")
    args = parser.parse_args(argv)
    replayer = Replayer(args.fixtures, args.axioms)
    if args.json:
        sys.exit(lean_json(args.json, replayer))
    source, out = sys.stdin.buffer, sys.stdout.buffer
    log = args.log.open("a", encoding="utf-8") if args.log else None
    while True:
        parts, raw_lines = [], 0
        while line := source.readline():
            if not line.strip():
                break
            parts.append(line.decode("utf-8").rstrip())
            raw_lines += 1
        if not parts:
            return  # end of input, as the REPL does
        began = time.perf_counter()
        query = "".join(parts)
        if query.startswith(("#", "--")):
            continue
        try:
            request = json.loads(query)
        except ValueError as exc:
            sys.stderr.write(
                f'uncaught exception: {{"message": "Could not parse JSON:\\n{exc}"}}\n'
            )
            sys.exit(1)
        if log is not None:
            entry = {"pid": os.getpid(), "cwd": os.getcwd(), "t": time.time(), "lines": raw_lines}
            entry["request"] = request
            log.write(json.dumps(entry) + "\n")
            log.flush()
        cmd = request.get("cmd", "")
        _misbehave(directives(cmd), out)
        if request.get("env") is None and "import" in cmd and args.import_delay:
            time.sleep(args.import_delay)
        reply = replayer.answer(request)
        if args.report_time:
            reply["standin_s"] = time.perf_counter() - began
        out.write(json.dumps(reply, indent=1, ensure_ascii=False).encode() + b"\n\n")
        out.flush()


if __name__ == "__main__":
    main()
