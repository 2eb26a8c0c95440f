"""Toolchain discovery, mode choice and version awareness of LeanBackend (no Lean runs here:
a fake `lake` on PATH is only ever found, never run, since REPL processes start lazily)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.lean.toolchain import discover, find_project, mismatch_sentence
from formalbench.core.errors import InputError, ToolchainMissingError

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
MINIF2F_PROJECT = SHARED / "data" / "minif2f-lean4" / "lean4_files"
FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"


@pytest.fixture
def no_lean(monkeypatch, tmp_path: Path) -> Path:
    """An environment with no Lean anywhere: empty PATH, HOME and ELAN_HOME."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _project(root: Path, with_repl: bool) -> Path:
    project = root / "proj"
    project.mkdir()
    for name in ("lean-toolchain", "lakefile.lean", "lake-manifest.json"):
        shutil.copy(MINIF2F_PROJECT / name, project / name)
    if with_repl:
        manifest = json.loads((project / "lake-manifest.json").read_text())
        manifest["packages"].append({"name": "REPL", "rev": "8948401ab", "type": "git"})
        (project / "lake-manifest.json").write_text(json.dumps(manifest))
    return project


def _fake_lake(bin_dir: Path) -> None:
    lake = bin_dir / "lake"
    lake.write_text("#!/bin/sh\nexit 99\n")
    lake.chmod(0o755)


def test_missing_toolchain_is_one_actionable_line(no_lean: Path) -> None:
    with pytest.raises(ToolchainMissingError) as caught:
        LeanBackend()
    text = str(caught.value)
    assert "\n" not in text and "lake" in text and "elan" in text and "install" in text
    with pytest.raises(InputError, match="not a Lake project"):
        discover(no_lean)
    with pytest.raises(InputError, match="does not exist"):
        LeanBackend(project_dir=no_lean / "nowhere")


def test_elan_bin_folder_is_searched(no_lean: Path) -> None:
    elan_bin = no_lean / "elan" / "bin"
    elan_bin.mkdir(parents=True)
    _fake_lake(elan_bin)
    project = _project(no_lean, with_repl=True)
    lean = LeanBackend(project_dir=project)
    assert lean.mode == "repl" and lean.toolchain.lake == str(elan_bin / "lake")
    lean.close()


def test_mode_follows_the_project(no_lean: Path) -> None:
    _fake_lake(no_lean / "bin")
    plain = _project(no_lean, with_repl=False)
    assert LeanBackend(project_dir=plain).mode == "file"
    with pytest.raises(ToolchainMissingError, match="REPL"):
        LeanBackend(project_dir=plain, mode="repl")
    shutil.rmtree(plain)
    with_repl = _project(no_lean, with_repl=True)
    assert LeanBackend(project_dir=with_repl).mode == "repl"
    assert LeanBackend(project_dir=with_repl, mode="file").mode == "file"
    with pytest.raises(InputError, match="mode"):
        LeanBackend(project_dir=with_repl, mode="fast")  # type: ignore[arg-type]


def test_version_and_mismatch_from_the_minif2f_project() -> None:
    command = [sys.executable, str(FAKE)]
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


def test_project_found_from_a_file_and_version_sentence(tmp_path: Path) -> None:
    task_file = next((MINIF2F_PROJECT / "MiniF2F" / "Test").glob("*.lean"))
    assert find_project(task_file) == MINIF2F_PROJECT.resolve()
    assert find_project(tmp_path) is None
    ours = ("leanprover/lean4:v4.24.0", "f897ebcf72cd16f89ab4577d0c826cd14afaafc7", "v4.24.0")
    both = mismatch_sentence(ours, "leanprover/lean4:v4.9.0", "0123456789abcdef")
    assert both.startswith("the task was made for") and " and " in both
