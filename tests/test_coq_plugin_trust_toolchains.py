"""On Rocq 9.2 too, no file but the plugin formalbench built and checked is loaded as its plugin.

Rocq 9 loads a plugin by findlib name only (the legacy `"file:name"` form warns and ignores
`file`), searching the `-I` folders in command-line order, then OCAMLPATH, then its own
(sysinit/coqinit.ml). So formalbench's private folder holds `formalbench/META` and the
plugin file, and `-I <that folder>` comes first on every command line. The attacks, on real
rocq in the provisioned root: a project's `-I` folder holding a planted `formalbench`
package (control: put first, the planted file is loaded); a library that declares our
plugin's name, loaded over such a folder (control: without ours first, the planted file is
loaded); a META or a plugin copy changed after the check; a planted cache entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_library import coq_version
from formalbench.toolchains import provision

ROCQ = "rocq-9.2"
pytestmark = [pytest.mark.coq]

GARBAGE = b"not a plugin: loading this file would fail\n"


@pytest.fixture(scope="module")
def rocq() -> CoqBackend:
    chosen = CoqBackend(toolchain=ROCQ)
    if plugin.plugin_folder(chosen.toolchain) is None:
        pytest.skip(f"the Coq plugin cannot be built for {ROCQ}")
    return chosen


def _run(backend: CoqBackend, folder: Path, args: list[str], read_only: list[str]) -> str:
    """coqc of the root in `folder` (bound writable) with the host folders `read_only`
    shown; stdout and stderr together, the exit status first."""
    chain = backend.toolchain
    done = subprocess.run(
        chain.argv([backend.coqc, *args], work=folder, read_only=read_only),
        cwd=folder,
        capture_output=True,
        text=True,
        env=chain.env(dict(os.environ)),
        timeout=300,
    )
    return f"{done.returncode}\n{done.stdout}{done.stderr}"


def _planted_project(folder: Path) -> Path:
    """A project folder (inside the work folder, so that the root shows it) holding a
    findlib package named like ours whose plugin file is garbage."""
    package = folder / "project" / plugin.FINDLIB_PACKAGE
    package.mkdir(parents=True)
    (package / "META").write_text(plugin.META)
    (package / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    return package.parent


def _library(backend: CoqBackend, folder: Path, text: str) -> None:
    (folder / "Candidate.v").write_text(text, encoding="utf-8")
    said = _run(backend, folder, ["-q", "Candidate.v"], [])
    assert said.startswith("0\n"), said[-2000:]


@pytest.mark.rocq
def test_our_folder_first_wins_over_a_planted_package_in_a_project_folder(
    rocq: CoqBackend, tmp_path: Path
) -> None:
    project = _planted_project(tmp_path)
    _library(rocq, tmp_path, "Definition x := 0.\n")
    where = plugin.plugin_folder(rocq.toolchain)
    assert where is not None
    assert plugin.coqtop_args(where)[:2] == ["-I", str(where)]
    # control: with the project's folder first, the planted file is what findlib finds
    (tmp_path / "Probe.v").write_text(plugin.declare_sentence(where), encoding="utf-8")
    planted_first = _run(
        rocq, tmp_path, ["-I", str(project), "-I", str(where), "-q", "Probe.v"], [str(where)]
    )
    assert not planted_first.startswith("0\n") and "fb_assumptions_plugin" in planted_first
    ours_first = _run(
        rocq, tmp_path, ["-I", str(where), "-I", str(project), "-q", "Probe.v"], [str(where)]
    )
    assert ours_first.startswith("0\n"), ours_first[-2000:]
    # the dump itself: the project's `-I` comes after ours and changes nothing
    backend = CoqBackend(toolchain=ROCQ, args=["-I", str(project)])
    assert kd.dump_targets(backend, tmp_path, ["Candidate.x"]).targets["Candidate.x"].found


@pytest.mark.rocq
def test_a_library_declaring_our_name_gets_ours_not_the_planted_package(
    rocq: CoqBackend, tmp_path: Path
) -> None:
    where = plugin.plugin_folder(rocq.toolchain)
    assert where is not None
    project = _planted_project(tmp_path)
    text = plugin.declare_sentence(where) + "Definition x := 0.\n"
    (tmp_path / "Candidate.v").write_text(text, encoding="utf-8")
    said = _run(rocq, tmp_path, ["-I", str(where), "-q", "Candidate.v"], [str(where)])
    assert said.startswith("0\n"), said[-2000:]
    # control: `Require`d with only the planted package on the path, it loads the garbage
    (tmp_path / "Use.v").write_text("Require Candidate.\n", encoding="utf-8")
    alone = _run(rocq, tmp_path, ["-I", str(project), "-q", "Use.v"], [])
    assert not alone.startswith("0\n") and str(project) in alone  # the planted file it tried
    dump = kd.dump_targets(
        CoqBackend(toolchain=ROCQ, args=["-I", str(project)]), tmp_path, ["Candidate.x"]
    )
    assert dump.targets["Candidate.x"].found


@pytest.mark.rocq
def test_a_changed_meta_or_plugin_copy_is_not_loaded(
    rocq: CoqBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plugin, "_known", {})
    where = plugin.plugin_folder(rocq.toolchain)
    assert where is not None
    package = where / plugin.FINDLIB_PACKAGE
    os.chmod(package, 0o700)
    meta = package / "META"
    os.chmod(meta, 0o600)
    meta.write_text(plugin.META.replace(plugin.PLUGIN_FILE, "other.cmxs"))
    with pytest.raises(plugin.PluginTampered, match="loading files"):
        plugin.coqtop_args(where)
    meta.write_text(plugin.META)
    plugin.verify(where)  # as written again
    path = package / plugin.PLUGIN_FILE
    os.chmod(path, 0o700)
    path.write_bytes(GARBAGE)
    with pytest.raises(plugin.PluginTampered, match="changed"):
        plugin.coqtop_args(where)
    _library(rocq, tmp_path, "Definition x := 0.\n")
    with pytest.raises(plugin.PluginTampered):
        kd.dump_targets(rocq, tmp_path, ["Candidate.x"])


@pytest.mark.rocq
def test_a_planted_plugin_in_the_rocq_cache_folder_is_built_over(
    rocq: CoqBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORMALBENCH_SANDBOX_WRITABLE", raising=False)
    monkeypatch.setenv("FORMALBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plugin, "_known", {})
    version = coq_version(rocq.toolchain)
    target = tmp_path / "cache" / "coq-plugin" / f"{ROCQ}-{version}-{plugin.source_hash(version)}"
    target.mkdir(parents=True, mode=0o700)
    os.chmod(target.parent, 0o700)
    (target / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    (target / ".complete").write_text("complete\n", encoding="utf-8")
    where = plugin.plugin_folder(rocq.toolchain)
    assert where is not None
    loaded = (where / plugin.FINDLIB_PACKAGE / plugin.PLUGIN_FILE).read_bytes()
    record = json.loads((target / ".complete").read_text(encoding="utf-8"))
    assert loaded != GARBAGE and hashlib.sha256(loaded).hexdigest() == record["sha256"]
    _library(rocq, tmp_path, "Definition x := 0.\n")
    assert kd.dump_targets(rocq, tmp_path, ["Candidate.x"]).targets["Candidate.x"].found


COQ820 = "coq-8.20"


@pytest.mark.skipif(provision.record_of(COQ820) is None, reason=f"{COQ820} is not installed")
def test_on_coq_8_20_the_plugin_is_loaded_by_absolute_path_never_searched(
    tmp_path: Path,
) -> None:
    """Coq 8.20 still has 8.16's legacy loading: ours is named by absolute path and no ML
    path is given, so a project `-I` folder holding a file named like ours is never
    searched (control: the legacy searched form loads the planted file)."""
    backend = CoqBackend(toolchain=COQ820)
    where = plugin.plugin_folder(backend.toolchain)
    assert where is not None
    assert "-I" not in plugin.coqtop_args(where)
    project = tmp_path / "project"
    project.mkdir()
    (project / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    _library(backend, tmp_path, "Definition x := 0.\n")
    (tmp_path / "Legacy.v").write_text(
        f'Declare ML Module "fb_assumptions_plugin:{plugin.FINDLIB_NAME}".\n', encoding="utf-8"
    )
    legacy = _run(backend, tmp_path, ["-I", str(project), "-q", "Legacy.v"], [])
    assert not legacy.startswith("0\n") and str(project) in legacy
    dump = kd.dump_targets(
        CoqBackend(toolchain=COQ820, args=["-I", str(project)]), tmp_path, ["Candidate.x"]
    )
    assert dump.targets["Candidate.x"].found
