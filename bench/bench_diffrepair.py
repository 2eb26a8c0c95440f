"""DiffRepair on perturbed real diffs from the two shipped histories (prints figures).

Run: python bench/bench_diffrepair.py [COMMITS_PER_REPO] (default 80); the data folder is found
like the tests find it (FORMALBENCH_TEST_DATA, else ../shared).

`python bench/bench_diffrepair.py bounds` prints, instead, the time and peak memory of one
answer in each of the cases of issue 23 (a realistic large hunk on a repetitive Coq file,
and pathological answers), each in a fresh process so that its peak RSS is its own.

Each real diff (`git diff -U3` of one modified .v/.lean file) is perturbed the ways models get
diffs wrong; the repaired result is compared with the real file after the commit. A perturbed
patch is *repairable* when every hunk keeps at least one non-blank genuine line of the old
side and either its header still names the right line or its genuine old-side block occurs
once in the file (an oracle that uses the gold position, independent of the algorithm).
Figures: share of repairable patches applied correctly, wrong applications (applied, but the
result differs from the gold file) over all patches, and, for comparison, how many apply
correctly without repair (`--no-repair`: hunks as written, at their header's line).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.pipelines.ape.diffrepair import apply_answer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.shared_data import DATA as SHARED_DATA  # noqa: E402

DATA = SHARED_DATA / "git-histories"
HDR = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class PHunk:
    old_start: int
    new_start: int
    lines: list[tuple[str, str, bool]] = field(default_factory=list)  # tag, text, genuine
    header_ok: bool = True


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def parse(diff: str) -> list[PHunk]:
    hunks: list[PHunk] = []
    for line in diff.splitlines():
        m = HDR.match(line)
        if m:
            hunks.append(PHunk(int(m.group(1)), int(m.group(3))))
        elif hunks and line[:1] in " +-":
            hunks[-1].lines.append((line[0], line[1:], True))
    return hunks


def render(hunks: list[PHunk], header: bool = True) -> str:
    out = ["--- a/file", "+++ b/file"] if header else []
    for h in hunks:
        old = sum(t != "+" for t, _, _ in h.lines)
        new = sum(t != "-" for t, _, _ in h.lines)
        out.append(f"@@ -{h.old_start},{old} +{h.new_start},{new} @@" if header else "@@")
        out.extend(t + s for t, s, _ in h.lines)
    return "\n".join(out) + "\n"


def _norm(s: str) -> str:
    return "".join(s.split())


def repairable(hunks: list[PHunk], before: str) -> bool:
    fnorm = [_norm(s) for s in before.splitlines()]
    for h in hunks:
        genuine = [_norm(s) for t, s, g in h.lines if t != "+" and g]
        if not any(genuine):
            return False
        if h.header_ok:
            continue
        k = len(genuine)
        hits = sum(fnorm[j : j + k] == genuine for j in range(len(fnorm) - k + 1))
        if hits != 1:
            return False
    return True


def perturb(kind: str, hunks: list[PHunk], rng: random.Random) -> tuple[str, list[PHunk]]:
    hs = [PHunk(h.old_start, h.new_start, list(h.lines)) for h in hunks]
    header = True
    if kind == "wrong_line_numbers":
        for h in hs:
            d = rng.choice([-1, 1]) * rng.randint(3, 60)
            h.old_start, h.new_start = max(1, h.old_start + d), max(1, h.new_start + d)
            h.header_ok = False
    elif kind == "changed_indentation":
        for h in hs:
            h.lines = [(t, "  " + s, g) for t, s, g in h.lines]
    elif kind == "dropped_context":
        for n, h in enumerate(hs):
            seq = h.lines if n % 2 else h.lines[::-1]
            while seq and seq[0][0] == " ":
                seq = seq[1:]
            h.lines = seq if n % 2 else seq[::-1]
            h.header_ok = False
    elif kind == "extra_context":
        for h in hs:
            ctx = [k for k, (t, _, _) in enumerate(h.lines) if t == " "]
            k = ctx[len(ctx) // 2] if ctx else 0
            h.lines.insert(k, (" ", "(* a line the model made up *) -- note", False))
            h.header_ok = False
    elif kind == "reordered_hunks":
        hs.reverse()
    elif kind == "whitespace_only":
        for h in hs:
            h.lines = [
                (t, re.sub(r"(\S) (\S)", r"\1  \2", s, count=1) + "  ", g)
                if t == " "
                else (t, s, g)
                for t, s, g in h.lines
            ]
    elif kind == "missing_header":
        header = False
        for h in hs:
            h.header_ok = False
    elif kind == "combined":
        for h in hs:
            h.lines = [(t, "  " + s, g) for t, s, g in h.lines]
            h.header_ok = False
        hs.reverse()
        header = False
    return render(hs, header), hs


KINDS = [
    "none",
    "wrong_line_numbers",
    "changed_indentation",
    "dropped_context",
    "extra_context",
    "reordered_hunks",
    "whitespace_only",
    "missing_header",
    "combined",
]


def samples(bundle: Path, suffix: str, per_repo: int, work: Path):
    repo = work / bundle.stem
    subprocess.run(
        ["git", "-c", "advice.detachedHead=false", "clone", "-q", str(bundle), str(repo)],
        check=True,
    )
    commits = git(repo, "rev-list", "--no-merges", "HEAD").split()
    rng = random.Random(7)
    rng.shuffle(commits)
    taken = 0
    for c in commits:
        if taken >= per_repo:
            break
        parents = git(repo, "rev-list", "--parents", "-n1", c).split()[1:]
        if len(parents) != 1:
            continue
        status = git(repo, "diff", "--name-status", "-M", parents[0], c)
        files = [
            ln.split("\t")[1]
            for ln in status.splitlines()
            if ln.startswith("M\t") and ln.endswith(suffix)
        ]
        for path in files[:2]:
            diff = git(repo, "diff", "-U3", parents[0], c, "--", path)
            if "\\ No newline" in diff or diff.count("\n") > 400:
                continue
            before = git(repo, "show", f"{parents[0]}:{path}")
            after = git(repo, "show", f"{c}:{path}")
            yield f"{bundle.stem}:{c[:8]}:{path}", before, after, diff
        taken += 1


def main(per_repo: int) -> None:
    rng = random.Random(11)
    stats: dict[str, Counter] = {k: Counter() for k in KINDS}
    wrong_examples: list[str] = []
    elapsed = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        items = [
            *samples(DATA / "coq-topology.bundle", ".v", per_repo, work),
            *samples(DATA / "batteries.bundle", ".lean", per_repo, work),
        ]
    for name, before, after, diff in items:
        hunks = parse(diff)
        if not hunks:
            continue
        for kind in KINDS:
            text, ph = perturb(kind, hunks, rng)
            ok_case = repairable(ph, before)
            start = time.perf_counter()
            result = apply_answer(text, before)
            elapsed += time.perf_counter() - start
            s = stats[kind]
            s["patches"] += 1
            s["repairable"] += ok_case
            strict = apply_answer(text, before, repair=False)
            s["strict_ok"] += strict.applied and strict.content == after
            correct = result.applied and result.content == after
            s["correct_repairable"] += correct and ok_case
            s["correct"] += correct
            if result.applied and not correct:
                s["wrong"] += 1
                wrong_examples.append(f"{kind} {name}")
    print(f"{len(items)} real diffs (coq-topology + batteries), {elapsed:.2f} s in DiffRepair")
    print(
        f"{'perturbation':22} {'patches':>8} {'repairable':>10} {'applied ok':>10} "
        f"{'ok/repairable':>13} {'wrong':>6} {'no-repair ok':>12}"
    )
    tot = Counter()
    for kind, s in stats.items():
        tot.update(s)
        share = s["correct_repairable"] / s["repairable"] if s["repairable"] else float("nan")
        print(
            f"{kind:22} {s['patches']:8d} {s['repairable']:10d} {s['correct']:10d} "
            f"{100 * share:12.1f}% {s['wrong']:6d} {s['strict_ok']:12d}"
        )
    share = tot["correct_repairable"] / max(1, tot["repairable"])
    print(
        f"{'all':22} {tot['patches']:8d} {tot['repairable']:10d} {tot['correct']:10d} "
        f"{100 * share:12.1f}% {tot['wrong']:6d} {tot['strict_ok']:12d}"
    )
    for line in wrong_examples[:10]:
        print("wrong:", line)


def _repetitive_coq(n_lines: int) -> list[str]:
    """A Coq file whose lines repeat (`Proof.`, the tactic, `Qed.`, blanks) around unique
    lemma statements, as a long library file looks."""
    out: list[str] = []
    k = 0
    while len(out) < n_lines:
        out += [f"Lemma l{k} : {k} + 0 = {k}.", "Proof.", "  intros.", "  reflexivity.", "Qed.", ""]
        k += 1
    return out[:n_lines]


def _hunk(old: list[str], new: list[str], start: int | None) -> str:
    """A hunk turning `old` into `new`, lines compared position by position (`new` may have
    one more line at the first difference, an insertion)."""
    head = f"@@ -{start},{len(old)} +{start},{len(new)} @@" if start else "@@"
    body = [head]
    shift = len(new) - len(old)
    j = 0
    for ln in old:
        if shift and j < len(new) and new[j] != ln:
            body.append("+" + new[j])
            j, shift = j + 1, 0
        if j < len(new) and new[j] == ln:
            body.append(" " + ln)
        else:
            body += ["-" + ln, "+" + new[j]]
        j += 1
    return "\n".join(body) + "\n"


def bound_case(name: str) -> tuple[str, str]:
    """(answer, file) of one case of `bounds`."""
    if name.startswith("realistic"):
        file = _repetitive_coq(6000)
        old = file[3000:3243]
        new = [ln.replace("reflexivity", "simpl; reflexivity") for ln in old]
        if name == "realistic":  # correct header and context
            return _hunk(old, new, 3001), "\n".join(file) + "\n"
        if name == "realistic-no-numbers":
            return _hunk(old, new, None), "\n".join(file) + "\n"
        if name == "realistic-typos":  # context typos: unique anchors, fuzzy windows
            typo = [
                ln.replace("intros.", "intro.") if k % 12 == 2 else ln for k, ln in enumerate(old)
            ]
            answer = _hunk(old, new, None)
            bad = _hunk(
                typo, [t if t != o else n for t, o, n in zip(typo, old, new, strict=True)], None
            )
            return bad if bad != answer else answer, "\n".join(file) + "\n"
        # re-indented context, wrong header: the repair path
        answer = _hunk(old, new, 2950).replace("\n  ", "\n    ")
        return answer, "\n".join(file) + "\n"
    if name == "identical-20000":
        file = ["Qed."] * 20000
        old = ["Qed."] * 2002
        new = ["Qed."] * 1001 + ["Proof."] + ["Qed."] * 1001
        old = ["Qed."] * 2001
        return _hunk(old, new, None), "\n".join(file) + "\n"
    if name == "identical-20000-fuzzy":
        file = ["Qed."] * 20000
        old = ["Qed ."] * 1000 + ["Qedd."] + ["Qed."] * 1001
        new = [*old[:1000], "Proof.", *old[1001:]]
        return _hunk(old, new, 17), "\n".join(file) + "\n"
    if name == "whole-100000":
        file = [f"Lemma x{k} : {k} = {k}. Proof. reflexivity. Qed." for k in range(100000)]
        new = [
            ln.replace("reflexivity", "easy") if k % 97 == 0 else ln for k, ln in enumerate(file)
        ]
        return _hunk(file, new, None), "\n".join(file) + "\n"
    if name == "whole-100000-repeated":
        file = ["Proof. reflexivity. Qed."] * 100000
        old = ["Proof.  reflexivity. Qed."] * 100000
        return _hunk(old, ["Proof. easy. Qed."] * 100000, None), "\n".join(file) + "\n"
    if name == "hunks-10000":
        file = _repetitive_coq(60000)
        parts = []
        for k in range(10000):
            a = 6 * k
            old = file[a : a + 5]
            new = [old[0], old[1], "  simpl.", *old[2:]]
            parts.append(_hunk(old, new, None))
        return "".join(parts), "\n".join(file) + "\n"
    raise SystemExit(f"unknown case {name}")


BOUND_CASES = [
    "realistic",
    "realistic-no-numbers",
    "realistic-repair",
    "realistic-typos",
    "identical-20000",
    "identical-20000-fuzzy",
    "whole-100000",
    "whole-100000-repeated",
    "hunks-10000",
]


def _one_bound(name: str) -> None:
    """Child process: build the case, time one `apply_answer`, print a JSON line."""
    import json
    import resource

    answer, file = bound_case(name)
    start = time.perf_counter()
    result = apply_answer(answer, file)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    why = result.reasons[0][:90] if result.reasons else ""
    print(
        json.dumps({"seconds": seconds, "peak_mb": peak_mb, "applied": result.applied, "why": why})
    )


def bounds() -> None:
    import json

    print(
        f"{'case':24} {'answer lines':>12} {'file lines':>10} {'seconds':>8} {'peak MB':>8}  outcome"
    )
    for name in BOUND_CASES:
        answer, file = bound_case(name)
        run = subprocess.run(
            [sys.executable, __file__, "--bound-case", name], capture_output=True, text=True
        )
        if run.returncode:
            print(f"{name:24} failed: {run.stderr.strip()[-300:]}")
            continue
        got = json.loads(run.stdout.strip().splitlines()[-1])
        outcome = "applied" if got["applied"] else f"refused: {got['why']}"
        print(
            f"{name:24} {answer.count(chr(10)):12,d} {file.count(chr(10)):10,d} "
            f"{got['seconds']:8.2f} {got['peak_mb']:8.0f}  {outcome}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["bounds"]:
        bounds()
    elif sys.argv[1:2] == ["--bound-case"]:
        _one_bound(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
