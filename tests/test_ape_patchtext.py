"""What `ape apply` and `ape eval` read from an answer (issue 23 item 3, issue 21 item 8):
file headers, multi-file diffs, binary and mode-only patches, whole files that are no
source, Markdown fences with prose, CRLF files, endless inputs."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.pipelines.ape.diffrepair import apply_answer, apply_reply
from formalbench.pipelines.ape.patchtext import file_sections, same_file

TASK = "theories/ZornsLemma/Sets.v"
FILE = "".join(f"Lemma l{i} : {i} = {i}.\nProof.\n  reflexivity.\nQed.\n\n" for i in range(1, 8))
HUNK = "@@ -6,4 +6,4 @@\n Lemma l2 : 2 = 2.\n Proof.\n-  reflexivity.\n+  easy.\n Qed.\n"
OTHER = (
    "diff --git a/theories/Other.v b/theories/Other.v\n--- a/theories/Other.v\n"
    "+++ b/theories/Other.v\n@@ -1,1 +1,2 @@\n Lemma x : True.\n+Axiom cheat : False.\n"
)
MINE = f"diff --git a/{TASK} b/{TASK}\n--- a/{TASK}\n+++ b/{TASK}\n" + HUNK


def test_sections_for_other_files_are_refused_and_the_task_file_applied() -> None:
    for diff in (OTHER + MINE, MINE + OTHER):  # task section last, then first
        result = apply_answer(diff, FILE, path=TASK)
        assert result.applied, result.reasons
        assert "easy." in result.content and "Axiom" not in result.content
        assert "cheat" not in result.content and "Other.v" not in result.content
        assert result.ignored and "theories/Other.v" in result.ignored[0]
    result = apply_answer(OTHER, FILE, path=TASK)
    assert not result.applied and "only other files" in result.reasons[0]
    no_numbers = (
        "--- a/theories/Other.v\n+++ b/theories/Other.v\n Lemma l1 : 1 = 1.\n+Axiom c : False.\n"
    )
    assert not apply_answer(no_numbers, FILE, path=TASK).applied
    # a removed `-- a comment` and an added `++ b` inside a hunk are lines, not headers
    lean = "@@ -1,2 +1,2 @@\n--- a comment\n+++ b\n x\n@@ -9 +9 @@\n-y\n+z\n"
    (only,) = file_sections(lean)
    assert not only.named and only.lines[1:3] == ["--- a comment", "+++ b"]


def test_the_same_file_under_another_folder_prefix_is_the_same_file() -> None:
    assert same_file("a/ZornsLemma/Sets.v", TASK) and same_file("b/Sets.v", TASK)
    assert same_file("/home/me/coq-topology/theories/ZornsLemma/Sets.v", TASK)
    assert not same_file("theories/Other/Sets.v", TASK)
    assert not same_file("../../etc/passwd", TASK) and not same_file("a/../Sets.v", TASK)
    diff = "--- a/ZornsLemma/Sets.v\n+++ b/ZornsLemma/Sets.v\n" + HUNK
    assert apply_answer(diff, FILE, path=TASK).applied


def test_binary_and_mode_only_patches_are_never_written_as_the_file() -> None:
    binary = (
        f"diff --git a/{TASK} b/{TASK}\nindex 1234567..89abcde 100644\nGIT binary patch\n"
        "literal 12\nTcmZ?wbhEHbRA6LaWMp^0\n\nliteral 0\nHcmV?d00001\n"
    )
    mode = f"diff --git a/{TASK} b/{TASK}\nold mode 100644\nnew mode 100755\n"
    bare = f"Binary files a/{TASK} and b/{TASK} differ\n"
    for answer in (binary, mode, bare):
        result = apply_reply(answer, FILE, path=TASK)
        assert not result.applied and result.content is None, answer
        assert result.reasons
    prose = "I think the lemma is fine as it is and nothing needs to change here."
    result = apply_reply(prose, FILE, path=TASK)
    assert not result.applied and "neither a diff nor a coq file" in result.reasons[0]
    whole = FILE.replace("reflexivity", "easy")
    assert apply_reply(f"```coq\n{whole}```\n", FILE, path=TASK).content == whole


def test_one_extraction_for_cli_and_eval_fence_prose_and_crlf(tmp_path) -> None:
    crlf = FILE.replace("\n", "\r\n")
    target = tmp_path / "Sets.v"
    target.write_bytes(crlf.encode())
    out = tmp_path / "out.v"
    runner = CliRunner()
    replies = [
        f"Here is the change.\n\n```diff\n{HUNK}```\n\nIt replaces the tactic.\n",
        f"The patch:\n{HUNK}\nThat is all.\n",
    ]
    for reply in replies:
        patch = tmp_path / "reply.md"
        patch.write_text(reply)
        res = runner.invoke(
            app, ["ape", "apply", str(patch), "--to", str(target), "--out", str(out), "--json"]
        )
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["applied"]
        data = out.read_bytes().decode()
        assert data == crlf.replace("  reflexivity.\r\n", "  easy.\r\n", 2).replace(
            "  easy.\r\n", "  reflexivity.\r\n", 1
        )
        assert apply_reply(reply, crlf, path=TASK).content == data  # what eval applies
    res = runner.invoke(app, ["ape", "apply", "/dev/zero", "--to", str(target), "--out", str(out)])
    assert res.exit_code == 2 and "larger than" in res.output
    assert "Traceback" not in res.output


def test_one_path_rule_for_every_spelling_of_a_path() -> None:
    """Issue 29 item 7: `..` is refused however it is spelled (git's C quoting with octal
    escapes, plain, backslashes, `.` and empty components), in every header of a section."""
    climbing = (
        "a/x/../Sets.v",
        '"a/\\056\\056/Sets.v"',
        '"a/x/\\056\\056/ZornsLemma/Sets.v"',
        '"a/\\56\\56/Sets.v"',  # short octal
        "a\\..\\Sets.v",
        "a/./x/.//../Sets.v",
        '"a/.\\056/Sets.v"',
    )
    for spelled in climbing:
        new = spelled.replace("a", "b", 1)
        for diff in (
            f"--- {spelled}\n+++ {new}\n" + HUNK,
            f"diff --git {spelled} {new}\n--- {spelled}\n+++ {new}\n" + HUNK,
        ):
            result = apply_answer(diff, FILE, path=TASK)
            assert not result.applied and result.content is None, (spelled, result)
            assert not apply_answer(diff, FILE, path=None).applied, spelled
    # the decoded spelling of an ordinary name is that name: git quotes non-ASCII ones
    quoted = '"a/ZornsLemma/\\123ets.v"'  # \123 is `S`
    diff = f"--- {quoted}\n+++ {quoted.replace('a/', 'b/', 1)}\n" + HUNK
    assert apply_answer(diff, FILE, path=TASK).applied
    # a git line naming another file than its ---/+++ pair: refused, not matched on either
    mixed = f"diff --git a/etc/passwd b/etc/passwd\n--- a/{TASK}\n+++ b/{TASK}\n" + HUNK
    result = apply_answer(mixed, FILE, path=TASK)
    assert not result.applied and "also name" in result.reasons[0]
    mixed = f'diff --git a/{TASK} b/{TASK}\n--- "a/\\056\\056/{TASK}"\n+++ b/{TASK}\n' + HUNK
    assert not apply_answer(mixed, FILE, path=TASK).applied


def test_mode_changes_symlinks_and_renames_are_refused_with_their_hunks() -> None:
    head = f"diff --git a/{TASK} b/{TASK}\n"
    pair = f"--- a/{TASK}\n+++ b/{TASK}\n"
    for meta, said in (
        ("old mode 100644\nnew mode 120000\n", "mode"),
        ("old mode 100644\nnew mode 100755\n", "mode"),
        ("index 1234567..89abcde 120000\n", "symlink"),
        ("deleted file mode 100644\nnew file mode 120000\n", "symlink"),
        ("new file mode 160000\n", "submodule"),
        (f"similarity index 90%\nrename from other.v\nrename to {TASK}\n", "also name"),
        (f"copy from /etc/passwd\ncopy to {TASK}\n", "also name"),
        (f"rename from {TASK}\nrename to {TASK}\n", "renames"),
    ):
        result = apply_answer(head + meta + pair + HUNK, FILE, path=TASK)
        assert not result.applied and result.content is None, meta
        assert said in result.reasons[0], (meta, result.reasons)
    # a symlink turned back into text, written after the hunk: still the same section's mode
    ok = head + "index 1234567..89abcde 100644\n" + pair + HUNK
    assert apply_answer(ok, FILE, path=TASK).applied
