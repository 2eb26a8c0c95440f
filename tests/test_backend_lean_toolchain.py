"""Toolchain discovery, mode choice, the environment read from Lake, and version awareness of
LeanBackend. No Lean runs here: a fake `lake` on PATH answers `lake env printenv` the way Lake
does (relative `./.lake/...` entries included), and the REPL binary and the toolchain's `lean`
are shims that start the stand-in (tests/standins/fake_repl.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend, command_outside
from formalbench.backends.lean.toolchain import (
    discover,
    find_project,
    mismatch_sentence,
    parse_printenv,
)
from formalbench.core.errors import BackendError, InputError, ToolchainMissingError
from formalbench.core.records import CheckStatus
from tests.shared_data import ROOT, needs_shared

SHARED = ROOT
MINIF2F_PROJECT = SHARED / "data" / "minif2f-lean4" / "lean4_files"
FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
RECORDINGS = ROOT / "fixtures" / "lean-repl"  # real REPL sessions the stand-in replays
SECRETS = {"OPENAI_API_KEY": "sk-test", "GITHUB_PAT": "ghp-test", "MY_PASSWD": "hunter2"}


@pytest.fixture
def no_lean(monkeypatch, tmp_path: Path) -> Path:
    """An environment with no Lean anywhere: empty PATH, HOME and ELAN_HOME."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _shim(path: Path, *args: str) -> Path:
    """An executable at `path` that starts the stand-in with `args`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    quoted = " ".join(f'"{a}"' for a in (sys.executable, FAKE, "--fixtures", RECORDINGS, *args))
    path.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    path.chmod(0o755)
    return path


def _project(root: Path, with_repl: bool, built: bool = True) -> Path:
    project = root / "proj"
    project.mkdir()
    for name in ("lean-toolchain", "lakefile.lean", "lake-manifest.json"):
        shutil.copy(MINIF2F_PROJECT / name, project / name)
    if with_repl:
        manifest = json.loads((project / "lake-manifest.json").read_text())
        manifest["packages"].append({"name": "REPL", "rev": "8948401ab", "type": "git"})
        (project / "lake-manifest.json").write_text(json.dumps(manifest))
        if built:
            repl = project / ".lake" / "packages" / "REPL" / ".lake" / "build" / "bin" / "repl"
            _shim(repl, "--log", str(root / "repl.log"))
    return project


def _fake_lake(bin_dir: Path, fail: bool = False) -> Path:
    """A `lake` that answers `env printenv` as Lake does and logs where it ran; the toolchain's
    `lean` (named by LEAN) is the stand-in in its `lean --json` role."""
    root = bin_dir.parent
    lean = _shim(root / "toolchain" / "bin" / "lean")
    lines = [
        "LEAN_PATH=./.lake/packages/mathlib/.lake/build/lib/lean:./.lake/build/lib/lean",
        f"LEAN_SYSROOT={root / 'toolchain'}",
        f"LEAN={lean}",
        "LAKE_CACHE_KEY=upload-secret",
        "OPENAI_API_KEY=printed-by-lake",
    ]
    printed = "\n".join(f"echo '{line}'" for line in lines)
    answer = "echo 'error: no such file or directory' >&2; exit 1" if fail else printed
    lake = bin_dir / "lake"
    lake.write_text(
        "#!/bin/sh\n"
        f'echo "$PWD $*" >> "{root / "lake.log"}"\n'
        'if [ "$1 $2" = "env printenv" ]; then\n'
        f"{answer}\n"
        f'echo "PATH={root / "toolchain" / "bin"}:$PATH"\n'
        "exit 0\nfi\nexit 99\n"
    )
    lake.chmod(0o755)
    return lake


def _whoami(result) -> dict:
    (note,) = [d for d in result.diagnostics if d.message.startswith('{"cwd"')]
    return json.loads(note.message)


def test_missing_toolchain_is_one_actionable_line(no_lean: Path) -> None:
    with pytest.raises(ToolchainMissingError) as caught:
        LeanBackend()
    text = str(caught.value)
    assert "\n" not in text and "lake" in text and "elan" in text and "install" in text
    with pytest.raises(InputError, match="not a Lake project"):
        discover(no_lean)
    with pytest.raises(InputError, match="does not exist"):
        LeanBackend(project_dir=no_lean / "nowhere")


@needs_shared
def test_elan_bin_folder_is_searched(no_lean: Path) -> None:
    elan_bin = no_lean / "elan" / "bin"
    elan_bin.mkdir(parents=True)
    _fake_lake(elan_bin)
    project = _project(no_lean, with_repl=True)
    lean = LeanBackend(project_dir=project)
    assert lean.mode == "repl" and lean.toolchain.lake == str(elan_bin / "lake")
    lean.close()


@needs_shared
def test_mode_follows_the_project(no_lean: Path) -> None:
    _fake_lake(no_lean / "bin")
    plain = _project(no_lean, with_repl=False)
    assert LeanBackend(project_dir=plain).mode == "file"
    with pytest.raises(ToolchainMissingError, match="REPL"):
        LeanBackend(project_dir=plain, mode="repl")
    shutil.rmtree(plain)
    unbuilt = _project(no_lean, with_repl=True, built=False)
    assert LeanBackend(project_dir=unbuilt).mode == "file"  # declared but not built
    with pytest.raises(ToolchainMissingError, match="not built: run `lake build repl`"):
        LeanBackend(project_dir=unbuilt, mode="repl")
    shutil.rmtree(unbuilt)
    with_repl = _project(no_lean, with_repl=True)
    assert LeanBackend(project_dir=with_repl).mode == "repl"
    assert LeanBackend(project_dir=with_repl, mode="file").mode == "file"
    with pytest.raises(InputError, match="mode"):
        LeanBackend(project_dir=with_repl, mode="fast")  # type: ignore[arg-type]


@needs_shared
@pytest.mark.parametrize("mode", ["repl", "file"])
def test_checks_run_outside_the_project_with_lakes_search_path(
    no_lean: Path, monkeypatch, mode: str
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    _fake_lake(no_lean / "bin")
    project = _project(no_lean, with_repl=True)
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    with LeanBackend(project_dir=project, mode=mode, workers=1) as lean:  # type: ignore[arg-type]
        assert lean.mode == mode
        result = lean.check("def a : Nat := 1 -- fake:whoami fake:write=escape.txt")
        assert result.compiled
        me = _whoami(result)
        workdir = Path(me["cwd"])
        assert (workdir / "escape.txt").is_file() or mode == "file"  # file mode: gone already
        again = _whoami(lean.check("def b : Nat := 2 -- fake:whoami"))
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before
    assert project.resolve() not in (workdir.resolve(), *workdir.resolve().parents)
    assert not workdir.exists()  # removed when its process ended (REPL) or after the file
    assert (again["cwd"] == me["cwd"]) is (mode == "repl")  # one folder per REPL process
    env = me["env"]
    assert env["LEAN_PATH"].split(":") == [
        str(project / ".lake/packages/mathlib/.lake/build/lib/lean"),
        str(project / ".lake/build/lib/lean"),
    ]
    assert env["LEAN_SYSROOT"] == str(no_lean / "toolchain")
    assert env["PATH"].split(":")[0] == str(no_lean / "toolchain" / "bin")
    assert not {*SECRETS, "LAKE_CACHE_KEY"} & set(env)
    calls = (no_lean / "lake.log").read_text().splitlines()
    assert calls == [f"{project} env printenv"]  # read once, in the project


@needs_shared
def test_lake_that_cannot_load_the_project_is_a_clear_error(no_lean: Path) -> None:
    _fake_lake(no_lean / "bin", fail=True)
    project = _project(no_lean, with_repl=True)
    with pytest.raises(BackendError) as caught:
        LeanBackend(project_dir=project)
    text = str(caught.value)
    assert "lake env printenv" in text and str(project) in text and "no such file" in text


def test_printenv_output_is_parsed_with_multiline_values() -> None:
    text = "A=1\nMULTI=first\nsecond line\nB=x=y\n"
    assert parse_printenv(text) == {"A": "1", "MULTI": "first\nsecond line", "B": "x=y"}


@needs_shared
def test_repl_command_is_made_to_run_outside_its_folder(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "tools").mkdir(parents=True)
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.24.0\n")
    shutil.copy(FAKE, project / "tools" / "fake_repl.py")
    fixtures = SHARED / "fixtures" / "lean-repl"
    command = [sys.executable, "tools/fake_repl.py", "--fixtures", str(fixtures)]
    assert command_outside(command, project)[1] == str(project / "tools/fake_repl.py")
    assert command_outside(["lake", "exe", "repl"], project) == [
        "lake", "--dir", str(project), "exe", "repl"
    ]  # fmt: skip
    assert command_outside(["./run", "-v", "x/y"], project) == [str(project / "./run"), "-v", "x/y"]
    with LeanBackend(project_dir=project, repl_command=command, workers=1) as lean:
        result = lean.check("theorem t : True := trivial -- fake:whoami", targets=["t"])
    assert result.compiled and result.status == CheckStatus.ok
    assert Path(_whoami(result)["cwd"]).resolve() != project.resolve()


@needs_shared
def test_version_and_mismatch_from_the_minif2f_project() -> None:
    command = [sys.executable, str(FAKE), "--fixtures", str(RECORDINGS)]
    with LeanBackend(project_dir=MINIF2F_PROJECT, repl_command=command) as lean:
        assert lean.lean_toolchain == "leanprover/lean4:v4.24.0"
        assert lean.library_revision == "f897ebcf72cd16f89ab4577d0c826cd14afaafc7"
        assert "leanprover/lean4:v4.24.0" in lean.version()
        assert "f897ebcf72cd16f89ab4577d0c826cd14afaafc7" in lean.version()
        assert lean.mismatch(None, None) is None
        assert lean.mismatch("leanprover/lean4:v4.24.0", "f897ebcf72cd") is None
        assert lean.mismatch("v4.24.0", "v4.24.0") is None  # the manifest's inputRev tag
        sentence = lean.mismatch("leanprover/lean4:v4.9.0", None)
        assert "v4.9.0" in sentence and "v4.24.0" in sentence
        assert "0123456789ab" in lean.mismatch(None, "0123456789abcdef")
    with LeanBackend(repl_command=command) as unknown:
        assert unknown.mismatch("leanprover/lean4:v4.9.0", "abc1234") is None


@needs_shared
def test_project_found_from_a_file_and_version_sentence(tmp_path: Path) -> None:
    task_file = next((MINIF2F_PROJECT / "MiniF2F" / "Test").glob("*.lean"))
    assert find_project(task_file) == MINIF2F_PROJECT.resolve()
    assert find_project(tmp_path) is None
    ours = ("leanprover/lean4:v4.24.0", "f897ebcf72cd16f89ab4577d0c826cd14afaafc7", "v4.24.0")
    both = mismatch_sentence(ours, "leanprover/lean4:v4.9.0", "0123456789abcdef")
    assert both.startswith("the task was made for") and " and " in both
