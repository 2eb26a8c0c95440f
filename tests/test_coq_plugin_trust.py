"""No file but the plugin formalbench built and checked is ever loaded as its plugin (issue 28).

Each attack of the class "put another file where the plugin is looked for", on real Coq:
a project's `-I` folder holding a file named like the plugin (Coq searches `-I` folders for
a legacy `Declare ML Module`; ours names its file by absolute path), a planted plugin in
the cache folder with a marker saying it is complete, the same with a marker giving the
planted file's own hash where sandboxed processes could have written it, a checked copy
changed after the check, and a sandboxed process trying to write the cache or the copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends import sandbox
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_library import coq_version
from formalbench.core.config import cache_path
from formalbench.core.errors import BackendError

pytestmark = [
    pytest.mark.coq,
    # the plugin's load path on Coq 8.16 (file by absolute path, legacy `-I` search); the
    # same attacks on Rocq 9.2's findlib loading: test_coq_plugin_trust_toolchains.py
    pytest.mark.host("the attacks on Coq 8.16's plugin loading; 9.2's are in *_toolchains.py"),
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
    pytest.mark.skipif(shutil.which("ocamlfind") is None, reason="no OCaml toolchain"),
]

GARBAGE = b"not a plugin: loading this file would fail\n"


def _library(folder: Path) -> Path:
    (folder / "Candidate.v").write_text("Definition x := 0.\n", encoding="utf-8")
    subprocess.run(["coqc", "-q", "Candidate.v"], cwd=folder, check=True)
    return folder


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty cache root of its own and no plugin known to this process yet; the test
    folders are not left writable to sandboxed processes (conftest does that for the
    stand-ins), so that the cache is trusted as formalbench left it."""
    monkeypatch.delenv("FORMALBENCH_SANDBOX_WRITABLE", raising=False)
    monkeypatch.setenv("FORMALBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plugin, "_known", {})
    return tmp_path / "cache" / "coq-plugin"


def _target(root: Path) -> Path:
    version = coq_version("coqc")
    return root / f"{version}-{plugin.source_hash(version)}"


def test_a_project_folder_holding_a_file_named_like_the_plugin_is_never_searched(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    folder = tmp_path / "lib"
    folder.mkdir()
    _library(folder)
    # control: the legacy, searched form does pick the planted file up from `-I`
    (folder / "Legacy.v").write_text(
        f'Declare ML Module "fb_assumptions_plugin:{plugin.FINDLIB_NAME}".\n', encoding="utf-8"
    )
    legacy = subprocess.run(
        ["coqc", "-q", "-I", str(project), "Legacy.v"], cwd=folder, capture_output=True, text=True
    )
    assert legacy.returncode != 0
    # ours: the project's `-I` comes first on the command line and changes nothing
    backend = CoqBackend(args=["-I", str(project)])
    dump = kd.dump_targets(backend, folder, ["Candidate.x"])
    assert dump.targets["Candidate.x"].found
    where = plugin.plugin_folder("coqtop")
    assert where is not None and "-I" not in plugin.coqtop_args(where)


def test_a_planted_plugin_with_a_complete_marker_in_the_cache_is_not_loaded(
    fresh: Path, tmp_path: Path
) -> None:
    target = _target(fresh)
    target.mkdir(parents=True, mode=0o700)
    (target / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    (target / ".complete").write_text("complete\n", encoding="utf-8")
    where = plugin.plugin_folder("coqtop")
    assert where is not None
    loaded = (where / plugin.PLUGIN_FILE).read_bytes()
    assert loaded != GARBAGE
    assert (
        hashlib.sha256(loaded).hexdigest()
        == json.loads((target / ".complete").read_text(encoding="utf-8"))["sha256"]
    )  # built again, over the planted folder
    folder = _library(tmp_path)
    assert kd.dump_targets(CoqBackend(), folder, ["Candidate.x"]).targets["Candidate.x"].found


def test_a_marker_with_the_planted_files_own_hash_is_refused_where_others_may_write(
    fresh: Path,
) -> None:
    target = _target(fresh)
    target.mkdir(parents=True, mode=0o700)
    (target / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    record = {"sha256": hashlib.sha256(GARBAGE).hexdigest()}
    (target / ".complete").write_text(json.dumps(record), encoding="utf-8")
    os.chmod(target, 0o770)  # group-writable: not as formalbench leaves it
    where = plugin.plugin_folder("coqtop")
    assert where is not None and (where / plugin.PLUGIN_FILE).read_bytes() != GARBAGE


def test_the_cache_is_not_read_where_a_sandboxed_process_could_have_written_it(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _target(fresh)
    target.mkdir(parents=True, mode=0o700)
    os.chmod(fresh, 0o700)
    (target / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    record = {"sha256": hashlib.sha256(GARBAGE).hexdigest()}
    (target / ".complete").write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setenv("FORMALBENCH_SANDBOX_WRITABLE", str(fresh.parent))
    assert plugin.cache_trusted(fresh) is not None
    where = plugin.plugin_folder("coqtop")
    assert where is not None and (where / plugin.PLUGIN_FILE).read_bytes() != GARBAGE
    assert (target / plugin.PLUGIN_FILE).read_bytes() == GARBAGE  # not even rebuilt there


def test_a_checked_copy_changed_afterwards_is_not_loaded(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from formalbench.backends.coq_session import CoqSession, SessionBroken

    where = plugin.plugin_folder("coqtop")
    assert where is not None
    path = where / plugin.PLUGIN_FILE
    os.chmod(path, 0o700)
    path.write_bytes(GARBAGE)
    with pytest.raises(plugin.PluginTampered):
        plugin.coqtop_args(where)
    with pytest.raises(BackendError, match="changed"):
        kd.dump_targets(CoqBackend(), _library(tmp_path), ["Candidate.x"])
    session = CoqSession(CoqBackend(), "coqtop")
    try:
        with pytest.raises(SessionBroken, match="changed"):
            session.start()
    finally:
        session.close()


@pytest.mark.skipif(sandbox.isolation() != "bwrap", reason="bwrap is not usable here")
def test_a_sandboxed_process_cannot_write_the_cache_or_the_checked_copy(tmp_path: Path) -> None:
    where = plugin.plugin_folder("coqtop")
    assert where is not None
    root = cache_path("coq-plugin")
    assert plugin.cache_trusted(root) is None
    targets = [root / "planted.cmxs", where / "planted.cmxs", where / plugin.PLUGIN_FILE]
    script = "; ".join(f"echo x > '{t}'" for t in targets)
    with sandbox.work_dir("test") as work:
        outcome = sandbox.run_limited(["sh", "-c", script], cwd=work, timeout=30)
    assert outcome.returncode != 0
    assert not (root / "planted.cmxs").exists() and not (where / "planted.cmxs").exists()
    plugin.verify(where)  # unchanged


def test_a_library_that_declares_the_plugins_name_gets_ours_not_a_planted_file(
    tmp_path: Path,
) -> None:
    """A library compiled with `Declare ML Module "fb_assumptions_plugin:<our name>"` (here
    against our real file, so that it compiles) is loaded after ours: Coq knows the name,
    so the project's `-I` folder with a planted file of that name is not searched."""
    where = plugin.plugin_folder("coqtop")
    assert where is not None
    project = tmp_path / "project"
    project.mkdir()
    (project / plugin.PLUGIN_FILE).write_bytes(GARBAGE)
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "Candidate.v").write_text(
        f'Declare ML Module "fb_assumptions_plugin:{plugin.FINDLIB_NAME}".\nDefinition x := 0.\n',
        encoding="utf-8",
    )
    subprocess.run(["coqc", "-q", "-I", str(where), "Candidate.v"], cwd=folder, check=True)
    # control: loaded without ours first, the library does pick the planted file up
    (folder / "Use.v").write_text("Require Candidate.\n", encoding="utf-8")
    alone = subprocess.run(
        ["coqc", "-q", "-I", str(project), "Use.v"], cwd=folder, capture_output=True, text=True
    )
    assert alone.returncode != 0
    dump = kd.dump_targets(CoqBackend(args=["-I", str(project)]), folder, ["Candidate.x"])
    assert dump.targets["Candidate.x"].found
