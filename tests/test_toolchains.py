"""Provisioned toolchains (issue 33): pinned manifests, a rootless install that is atomic and
resumable and fails in one line, programs run in the root through bwrap, Rocq 9 library
names mapped in one place, and the toolchain recorded in every verdict and cache key.

Tests marked `rocq` run on the installed rocq-9.2 (skipped where it is not installed, failed
under FORMALBENCH_REQUIRE_ROCQ=1 as in CI); the others need only the host."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.coq import CoqBackend
from formalbench.backends.sandbox import run_limited, work_dir
from formalbench.cli.main import app
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import Language, Task
from formalbench.toolchains import manifest, provision, rootfs
from formalbench.toolchains.manifest import PinnedPackage
from formalbench.toolchains.prepare import names_for, prepare_for
from formalbench.toolchains.toolchain import resolve, tasks_toolchain
from tests.conftest import ROCQ

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
needs_bwrap = pytest.mark.skipif(rootfs.bwrap_program() is None, reason="no working bwrap")
needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="no dpkg-deb")
rocq = pytest.mark.rocq


class Version:
    def __init__(self, version: str) -> None:
        self._version = version

    def version(self) -> str:
        return self._version


COQ8, ROCQ9 = Version("8.16.1"), Version("9.2")


# --- the one place a text is prepared for a toolchain ---------------------------------------


def test_allow_list_names_are_read_as_the_toolchain_prints_them() -> None:
    classic = "Coq.Logic.Classical_Prop.classic"
    assert names_for(ROCQ9, [classic]) == {
        classic,
        "Stdlib.Logic.Classical_Prop.classic",
        "Corelib.Logic.Classical_Prop.classic",
    }
    assert names_for(COQ8, ["Stdlib.Logic.Classical_Prop.classic"]) == {
        "Stdlib.Logic.Classical_Prop.classic",
        classic,
    }
    assert names_for(COQ8, [classic]) == {classic}  # nothing to map on its own Coq
    mine = ["MyLib.Ax.cheat", "Coqx.A.b", "Stdlib"]  # no other root, no prefix match
    assert names_for(ROCQ9, mine) == set(mine) == names_for(COQ8, mine)


def test_rocq9_names_are_mapped_for_coq8_keeping_every_offset() -> None:
    text = (
        "From Stdlib Require Import Arith.\n"
        "Require Import Stdlib.Reals.Reals.\n"
        "(* From Stdlib Require Import Lia. *)\n"
        'Definition s := "Stdlib.x".\n'
        "Theorem é : Stdlib.Init.Nat.add 1 1 = 2. Proof. reflexivity. Qed.\n"
    )
    out, changes = prepare_for(COQ8, text)
    assert len(out.encode()) == len(text.encode())  # coqc's byte offsets still point home
    assert out.splitlines()[0] == "From Coq    Require Import Arith."
    assert "   Coq.Reals.Reals" in out and "   Coq.Init.Nat.add" in out
    assert out.splitlines()[2] == text.splitlines()[2]  # a comment is left alone
    assert out.splitlines()[3] == text.splitlines()[3]  # so is a string
    assert changes == [
        "line 1: From Stdlib -> From Coq",
        "line 2: Stdlib. -> Coq.",
        "line 5: Stdlib. -> Coq.",
    ]


def test_nothing_changes_on_rocq9_or_without_a_new_name() -> None:
    text = "From Coq Require Import Arith.\nCheck Coq.Init.Nat.add.\n"
    assert prepare_for(ROCQ9, text) == (text, [])
    assert prepare_for(COQ8, text) == (text, [])
    stdlib = "From Stdlib Require Import Arith.\n"
    assert prepare_for(ROCQ9, stdlib) == (stdlib, [])


def test_a_text_with_its_own_stdlib_keeps_its_qualified_names() -> None:
    text = "Module Stdlib. Definition x := 0. End Stdlib.\nCheck Stdlib.x.\n"
    out, changes = prepare_for(COQ8, text)
    assert out == text and changes and "left as written" in changes[0]
    near = "Definition MyStdlib := 0.\nCheck Stdlib.Init.Nat.add.\n"  # not the name itself
    assert "   Coq.Init" in prepare_for(COQ8, near)[0]


@needs_coq
def test_a_rocq9_proof_passes_on_the_host_and_the_verdict_says_what_changed() -> None:
    from formalbench.checking.verifier import StrictVerifier

    original = "From Stdlib Require Import Arith.\nTheorem t : forall n, n + 0 = n.\nAdmitted.\n"
    candidate = original.replace("Admitted.", "Proof. intros n. apply Nat.add_0_r. Qed.")
    with CoqBackend(toolchain="host", workers=1, timeout=60) as coq:
        verdict = StrictVerifier(coq).verify(original, candidate)
    assert verdict.passed, verdict
    assert verdict.prepared == ["line 1: From Stdlib -> From Coq"]
    assert verdict.toolchain is not None and verdict.toolchain.name == "host"
    assert verdict.toolchain.version.startswith("8.")


# --- manifests ------------------------------------------------------------------------------
def test_every_shipped_manifest_is_pinned_completely() -> None:
    assert {"rocq-9.2", "coq-8.20"} <= set(manifest.names())
    for name in manifest.names():
        pinned = manifest.load(name)
        names = [p.name for p in pinned.packages]
        assert len(names) == len(set(names)) and "coq" in names, name
        for package in pinned.packages:
            assert package.filename.startswith("pool/") and package.filename.endswith(".deb")
            assert len(package.sha256) == 64 and package.size > 0
        assert all(pinned.version_of(lib) for lib in pinned.libraries), name
        assert pinned.smoke and all("Require" in t for t in pinned.smoke.values())
    rocq92 = manifest.load("rocq-9.2")
    assert rocq92.version_of(
        "coq",
    ) and rocq92.version_of("coq").startswith("9.2")  # type: ignore[union-attr]
    # the build hierarchy-builder and analysis were compiled against (see the manifest)
    assert rocq92.version_of("libcoq-elpi") == rocq92.overrides["libcoq-elpi"]["version"]


def test_an_unknown_toolchain_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(InputError, match="can install coq-8.20, rocq-9.2"):
        resolve("rocq-7")
    with pytest.raises(InputError, match="can install"):
        manifest.load("../etc/passwd")


# --- provisioning ---------------------------------------------------------------------------
@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FORMALBENCH_CACHE", str(tmp_path / "cache"))
    # `--toolchain` sets the process's toolchain: restored after the test, whatever it did
    monkeypatch.setenv("FORMALBENCH_TOOLCHAIN", os.environ.get("FORMALBENCH_TOOLCHAIN", "host"))
    return tmp_path / "cache"


def _deb(folder: Path, name: str, files: dict[str, str]) -> Path:
    """A real, tiny .deb (dpkg-deb --build) holding `files`."""
    tree = folder / f"{name}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@t>\n"
        "Description: test\n"
    )
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    deb = folder / "pool" / f"{name}_1.0_all.deb"
    deb.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "--build", str(tree), str(deb)], check=True, capture_output=True)
    return deb


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A local HTTP archive serving tmp_path/archive; yields its URL and the paths asked."""
    root = tmp_path / "archive"
    root.mkdir()
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            asked.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def _fake_manifest(tmp_path: Path, url: str, debs: list[Path]) -> manifest.Manifest:
    base = manifest.load("rocq-9.2")
    packages = []
    for deb in debs:
        target = tmp_path / "archive" / "pool" / deb.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(deb, target)
        digest = subprocess.run(["sha256sum", str(deb)], capture_output=True, text=True)
        packages.append(
            PinnedPackage(
                name=deb.name.split("_")[0],
                version="1.0",
                filename=f"pool/{deb.name}",
                size=deb.stat().st_size,
                sha256=digest.stdout.split()[0],
            )
        )
    return replace(base, name="fake", mirror=url, packages=packages, libraries=[])


@needs_dpkg
@needs_bwrap
def test_a_root_whose_smoke_test_fails_is_never_installed_and_downloads_resume(
    tmp_path: Path, cache: Path, mirror: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, asked = mirror
    debs = [_deb(tmp_path, "one", {"usr/share/one/a.txt": "a"}), _deb(tmp_path, "two", {})]
    fake = _fake_manifest(tmp_path, url, debs)
    monkeypatch.setattr(manifest, "load", lambda _name: fake)
    seen: list[tuple[str, int, int]] = []
    with pytest.raises(provision.ProvisionError, match="coqc does not start"):
        provision.install("fake", progress=lambda *a: seen.append(a))
    assert provision.record_of("fake") is None and not (cache / "toolchains" / "fake").exists()
    assert not list((cache / "toolchains").glob(".install-*"))  # no half root left either
    assert ("extract", 2, 2) in seen and seen[-1][0] == "extract"
    assert len(asked) == 2
    # a re-run fetches nothing already downloaded and verified
    with pytest.raises(provision.ProvisionError):
        provision.install("fake")
    assert len(asked) == 2


@needs_dpkg
@needs_bwrap
def test_cli_install_progress_off_a_terminal_counts_an_earlier_download_as_resumed(
    tmp_path: Path, cache: Path, mirror: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each phase ends with its line (cli.progress), then the error; a rerun's download is
    what the first left: resumed, so no rate is claimed for it."""
    url, _ = mirror
    debs = [_deb(tmp_path, "one", {"usr/share/one/a.txt": "a"}), _deb(tmp_path, "two", {})]
    fake = _fake_manifest(tmp_path, url, debs)
    monkeypatch.setattr(manifest, "load", lambda _name: fake)
    runner = CliRunner()
    first = runner.invoke(app, ["toolchain", "install", "fake"])
    assert first.exit_code == 2
    said = first.stderr.splitlines()
    assert said[0].startswith("download: 1/1 MiB (100%) | ") and said[0].endswith("finished")
    assert said[1].startswith("unpack: 2/2 packages (100%) | ")
    assert said[-1].startswith("formalbench: error: ") and "coqc does not start" in said[-1]
    again = runner.invoke(app, ["toolchain", "install", "fake"]).stderr.splitlines()
    assert again[0].startswith("download: 1/1 MiB (100%), 1 resumed | 0:00:00 elapsed")
    assert "MiB/s" not in again[0] and "s/MiB" not in again[0]  # nothing fetched: no rate


@needs_dpkg
@needs_bwrap
def test_a_vanished_pin_and_a_changed_file_fail_in_one_line(
    tmp_path: Path, cache: Path, mirror: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = mirror
    fake = _fake_manifest(tmp_path, url, [_deb(tmp_path, "one", {})])
    gone = replace(fake, packages=[replace(fake.packages[0], filename="pool/gone_1.0_all.deb")])
    monkeypatch.setattr(manifest, "load", lambda _name: gone)
    with pytest.raises(provision.ProvisionError, match="one 1.0 is no longer in the package"):
        provision.install("fake")
    bad = replace(fake, packages=[replace(fake.packages[0], sha256="0" * 64)])
    monkeypatch.setattr(manifest, "load", lambda _name: bad)
    with pytest.raises(provision.ProvisionError, match="not the pinned file"):
        provision.install("fake")
    assert not list((cache / "toolchains" / ".downloads" / "fake").glob("*.deb*"))
    dead = replace(fake, mirror="http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr(manifest, "load", lambda _name: dead)
    with pytest.raises(provision.ProvisionError, match="cannot reach the package archive"):
        provision.install("fake")


def test_no_bwrap_is_one_line(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provision, "bwrap_program", lambda: None)
    with pytest.raises(provision.ProvisionError, match="bubblewrap"):
        provision.install("rocq-9.2", force=True)


def test_too_little_disk_is_one_line(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: shutil._ntuple_diskusage(1, 1, 1))  # type: ignore[attr-defined]
    with pytest.raises(provision.ProvisionError, match="not enough disk space"):
        provision.install("rocq-9.2", force=True)


def test_cli_list_install_remove_speak_in_one_line(cache: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["toolchain", "list"])
    assert (
        listed.exit_code == 0 and "rocq-9.2" in listed.stdout and "not installed" in listed.stdout
    )
    # `*` marks the default: here what FORMALBENCH_TOOLCHAIN names, the suite's own
    # (tests/conftest.py), listed even where this empty cache does not hold it
    assert f"* {os.environ['FORMALBENCH_TOOLCHAIN']} " in listed.stdout
    for argv, said in (
        (["toolchain", "install", "host"], "nothing to install"),
        (["toolchain", "remove", "rocq-9.2"], "is not installed"),
        (["toolchain", "install", "nope"], "unknown toolchain"),
        (["check", "x.v", "--toolchain", "rocq-9.2"], "is not installed"),
    ):
        done = runner.invoke(app, argv)
        assert done.exit_code == 2 and said in done.stderr, (argv, done.output)
        assert len(done.stderr.strip().splitlines()) == 1


def test_tasks_name_their_toolchain_only_with_a_known_name() -> None:
    def task(i: int, chain: str | None) -> Task:
        return Task(id=f"t{i}", language=Language.coq, formal="", toolchain=chain)

    assert tasks_toolchain([task(1, "rocq-9.2"), task(2, None)]) == "rocq-9.2"
    assert tasks_toolchain([task(1, "coq 8.16")]) is None  # free text stays a note
    with pytest.raises(InputError, match="name 2 toolchains"):
        tasks_toolchain([task(1, "rocq-9.2"), task(2, "host")])


# --- running in a root ----------------------------------------------------------------------
def test_a_folder_inside_the_roots_own_folders_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "coqc").write_text("")
    if rootfs.bwrap_program() is None:
        pytest.skip("no working bwrap")
    with pytest.raises(ToolchainMissingError, match="toolchain's own folder"):
        rootfs.root_argv(root, ["coqc"], work="/usr/share/x")
    with pytest.raises(ToolchainMissingError, match="no program /usr/bin/coqtop"):
        rootfs.root_argv(root, ["coqtop"], work=tmp_path)


@rocq
def test_the_root_is_read_only_its_folder_writable_and_offline(tmp_path: Path) -> None:
    chain = resolve(ROCQ)
    script = (
        "touch /usr/leak 2>/dev/null && echo wrote-usr; touch here && echo wrote-here; "
        "cat /etc/debian_version; ls /root /home 2>/dev/null | head -1; "
        "exec 3<>/dev/tcp/127.0.0.1/1 2>/dev/null && echo net"
    )
    with work_dir("test") as folder:
        out = run_limited(
            ["dash", "-c", script], cwd=folder, timeout=60, root=chain.sandbox_root,
            env=chain.env({}),
        )  # fmt: skip
    assert "wrote-here" in out.stdout and "wrote-usr" not in out.stdout
    assert "net" not in out.stdout.split()
    assert not (Path(str(chain.sandbox_root)) / "usr" / "leak").exists()


@rocq
def test_rocq92_checks_with_its_libraries_and_says_so() -> None:
    from formalbench.checking.verifier import StrictVerifier

    original = (
        "From Stdlib Require Import Arith.\n"
        "From mathcomp Require Import all_ssreflect.\n"
        "Theorem t (n : nat) : n + 0 = n.\nAdmitted.\n"
    )
    genuine = original.replace("Admitted.", "Proof. by rewrite addn0. Qed.")
    with (
        CoqBackend(toolchain=ROCQ, workers=1, timeout=120) as coq,
        CoqBackend(toolchain="host", workers=1, timeout=60) as host,
    ):
        verdict = StrictVerifier(coq).verify(original, genuine)
        cheat = StrictVerifier(coq).verify(
            original, original.replace("Admitted.", "Proof. Admitted.")
        )
        assert coq.version() != host.version()  # a cached verdict never crosses toolchains
    assert verdict.passed, verdict
    assert not cheat.passed
    assert verdict.toolchain is not None and verdict.toolchain.name == ROCQ
    assert verdict.toolchain.version.startswith("9.2")
    assert verdict.toolchain.libraries["libcoq-mathcomp-ssreflect"].startswith("2.6")
    assert verdict.prepared == []  # Rocq 9 reads Stdlib as written
    record = json.loads(verdict.model_dump_json())
    # Rocq 9.2.0's open bugs of the table (backends/coq_known_bugs.py)
    assert record["toolchain"]["known_unsound"] == ["rocq#21839", "rocq#22387", "rocq#22378"]


def test_a_rocq_project_file_is_read_like_a_coq_project_and_preferred(tmp_path: Path) -> None:
    from formalbench.backends.coq_project import read_coq_project

    (tmp_path / "lib").mkdir()
    (tmp_path / "_RocqProject").write_text("-Q lib Rocqy\n")
    assert read_coq_project(tmp_path).args[-1] == "Rocqy"
    (tmp_path / "_CoqProject").write_text("-Q lib Coqy\n")
    assert read_coq_project(tmp_path).args[-1] == "Rocqy"  # as `rocq makefile` picks
    (tmp_path / "_RocqProject").unlink()
    assert read_coq_project(tmp_path).args[-1] == "Coqy"


@rocq
def test_a_warm_rocq92_session_reads_its_warnings_and_libraries() -> None:
    """Rocq 9's coqtop wraps warnings in `<warning>` tags; a session must still parse them
    (before, every session on 9.2 broke and fell back to coqc)."""
    import time

    from formalbench.backends import coq_session

    with CoqBackend(toolchain=ROCQ, workers=1, timeout=120) as coq:
        session = coq_session.CoqSession(coq, coq.toolchain.program("coqtop"))
        try:
            session.start()
            deadline = time.monotonic() + 120
            session.prepare(["Require Arith."], deadline)  # warns: no Stdlib prefix
            assert session.libraries and "Stdlib.Arith.Arith" in session.libraries
            (segment,) = session.run_check([], ["Check nonexistent_name."], deadline)
            assert segment.errors and "nonexistent_name" in segment.errors[0]
        finally:
            session.close()


@needs_coq
def test_a_version_with_a_known_unfixed_bug_is_marked() -> None:
    """The toolchain record lists the table's unfixed bugs of its version
    (backends/coq_known_bugs.py; tests/test_coq_known_bugs.py checks the table itself)."""
    from formalbench.backends.coq_known_bugs import known_unsound
    from formalbench.toolchains import known_bugs

    host = resolve("host").info()
    assert host.known_unsound == known_unsound(host.version) != []  # 8.16.1: several
    assert known_bugs.known_unsound_for("9.2") == ["rocq#21839", "rocq#22387", "rocq#22378"]
    assert known_bugs.FIXED_IN["rocq#21839"] == "9.3.0"


@rocq
def test_coqchk_and_rocq_run_in_the_root(tmp_path: Path) -> None:
    chain = resolve(ROCQ)
    (tmp_path / "M.v").write_text("Definition one := 1.\n")
    built = chain.run([chain.program("coqc"), "-Q", ".", "Lib", "M.v"], cwd=tmp_path, timeout=120)
    assert built.returncode == 0, built.stderr
    checked = chain.run(
        [chain.program("coqchk"), "-silent", "-Q", ".", "Lib", "Lib.M"], cwd=tmp_path, timeout=120
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout
    said = chain.run([chain.program("rocq"), "--version"], cwd=tmp_path, timeout=60)
    assert "Rocq Prover, version 9.2" in said.stdout


@needs_coq
def test_the_toolchain_option_reaches_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from formalbench.toolchains.toolchain import ENV_VAR

    monkeypatch.setenv(ENV_VAR, "host")  # restored after: the option sets it for the process
    (tmp_path / "o.v").write_text(
        "From Stdlib Require Import Arith.\nTheorem t : 1 = 1.\nAdmitted.\n"
    )
    (tmp_path / "c.v").write_text(
        "From Stdlib Require Import Arith.\nTheorem t : 1 = 1.\nProof. reflexivity. Qed.\n"
    )
    names = ["host"] + ([ROCQ] if provision.record_of(ROCQ) else [])
    for name in names:
        done = CliRunner().invoke(
            app,
            ["check", str(tmp_path / "c.v"), "--against", str(tmp_path / "o.v"), "--json",
             "--toolchain", name],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        verdict = json.loads(done.stdout)
        verdict = verdict.get("verdict", verdict)
        assert verdict["passed"] and verdict["toolchain"]["name"] == name
        assert bool(verdict["prepared"]) == (name == "host")  # From Stdlib mapped for 8.16


@needs_dpkg
@needs_bwrap
def test_an_install_that_passes_its_smoke_test_is_renamed_into_place_and_removed(
    tmp_path: Path, cache: Path, mirror: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = mirror
    fake = _fake_manifest(tmp_path, url, [_deb(tmp_path, "one", {"usr/share/one/a.txt": "a"})])
    monkeypatch.setattr(manifest, "load", lambda _name: fake)
    monkeypatch.setattr(provision, "_smoke", lambda *_a: "9.9")  # the root has no coqc
    done = provision.install("fake")
    root = cache / "toolchains" / "fake"
    assert done.root == root and (root / "usr/share/one/a.txt").read_text() == "a"
    assert (root / "lib64").is_symlink() is False  # no usr/lib64 here: no dangling link made
    record = provision.record_of("fake")
    assert record is not None and record["coq_version"] == "9.9"
    assert record["packages"] == {"one": "1.0"}
    assert not (cache / "toolchains" / ".downloads" / "fake").exists()  # kept only on failure
    assert provision.install("fake").already
    again = provision.install("fake", force=True)  # the old root is swapped out, then deleted
    assert not again.already and provision.record_of("fake") is not None
    assert not list((cache / "toolchains").glob(".trash-*"))
    assert provision.remove("fake") and provision.record_of("fake") is None
    assert not provision.remove("fake")
