#!/usr/bin/env python3
"""Pin a toolchain manifest's packages from Debian's archive as it is today (maintainer tool).

    python3 scripts/pin_toolchain.py src/formalbench/toolchains/manifests/rocq-9.2.json

Reads the manifest's `request` (packages asked for), `suites` (the first is the preferred
release, apt's `-t`; the others fill in what it lacks) and `overrides` (a package held at an
older build still in the archive's pool), resolves the full dependency closure with a private,
rootless apt state (an empty dpkg status, so nothing of this machine's packages leaks in;
Recommends left out), and writes back `packages`: every package's exact version, pool path,
size, SHA-256 and installed size. The installer (`formalbench toolchain install`) then needs
no resolver. Run it again when the archive has moved on, install, and commit the manifest
only when the smoke test passes.

An override is resolved with the dependencies of the package's current candidate in the
index (its own declared ones name an ABI the suite no longer has: that is why it is held),
after the held `.deb` is fetched and its real name/version/hash recorded; the installer's
smoke test is what shows the held build loads.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from formalbench.toolchains.manifest import PinnedPackage, _from_json, to_json  # noqa: E402

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def apt_options(state: Path) -> list[str]:
    return [
        f"-o=Dir={state}",
        f"-o=Dir::Etc={state}/etc/apt",
        f"-o=Dir::State={state}/var/lib/apt",
        f"-o=Dir::State::status={state}/var/lib/dpkg/status",
        f"-o=Dir::Cache={state}/var/cache/apt",
        "-o=Acquire::Check-Valid-Until=false",
        "-o=APT::Architecture=amd64",
        "-o=APT::Install-Recommends=false",
    ]


def make_state(state: Path, mirror: str, suites: list[str]) -> None:
    for sub in (
        "etc/apt/sources.list.d",
        "etc/apt/preferences.d",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
        "var/lib/dpkg",
        "local",
    ):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "var/lib/dpkg/status").write_text("")
    lines = [f"deb [signed-by={KEYRING}] {mirror} {suite} main" for suite in suites]
    (state / "etc/apt/sources.list").write_text("\n".join(lines) + "\n")


def run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def stanza(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0].isspace() and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def add_override(state: Path, opts: list[str], mirror: str, name: str, spec: dict) -> None:
    """Put the held build in a local flat repository pinned above everything else."""
    deb = state / "local" / spec["filename"].rsplit("/", 1)[-1]
    with urllib.request.urlopen(f"{mirror}/{urllib.request.quote(spec['filename'])}") as r:
        deb.write_bytes(r.read())
    control = run(["dpkg-deb", "-f", str(deb)])
    current = stanza(run(["apt-cache", *opts, "show", name]))
    fields = stanza(control)
    fields["Depends"] = current.get("Depends", "")
    fields["Filename"] = "./" + deb.name
    fields["Size"] = str(deb.stat().st_size)
    fields["SHA256"] = hashlib.sha256(deb.read_bytes()).hexdigest()
    body = "".join(f"{k}: {v}\n" for k, v in fields.items())
    (state / "local/Packages").write_text(body + "\n")
    (state / "etc/apt/sources.list.d/local.list").write_text(
        f"deb [trusted=yes] file:{state}/local ./\n"
    )
    (state / "etc/apt/preferences.d/override").write_text(
        f"Package: {name}\nPin: version {spec['version']}\nPin-Priority: 1001\n"
    )


def pin(path: Path) -> None:
    manifest = _from_json(json.loads(path.read_text()))
    with tempfile.TemporaryDirectory(prefix="pin-toolchain-") as folder:
        state = Path(folder)
        opts = apt_options(state)
        make_state(state, manifest.mirror, manifest.suites)
        run(["apt-get", *opts, "update"])
        for name, spec in manifest.overrides.items():
            add_override(state, opts, manifest.mirror, name, spec)
        if manifest.overrides:
            run(["apt-get", *opts, "update"])
        sim = run(["apt-get", *opts, "-s", "-t", manifest.suites[0], "install", *manifest.request])
        chosen = [
            (line.split()[1], line.split()[2].strip("(")) for line in sim.splitlines()
            if line.startswith("Inst ")
        ]  # fmt: skip
        wanted = [f"{name}={version}" for name, version in sorted(chosen)]
        shown = run(["apt-cache", *opts, "show", *wanted])  # one call: each loads the index
        found = {}
        for block in shown.split("\n\n"):
            fields = stanza(block)
            if fields:
                found.setdefault((fields["Package"], fields["Version"]), fields)
        packages = []
        for name, version in sorted(chosen):
            fields = found[(name, version)]
            filename = fields["Filename"]
            if name in manifest.overrides:
                filename = manifest.overrides[name]["filename"]
            packages.append(
                PinnedPackage(
                    name=name,
                    version=version,
                    filename=filename,
                    size=int(fields["Size"]),
                    sha256=fields["SHA256"],
                    installed_kib=int(fields.get("Installed-Size", "0")),
                )
            )
    data = to_json(manifest)
    data["packages"] = [vars(p) for p in packages]
    data["generated"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{path}: {len(packages)} packages, {sum(p.size for p in packages) >> 20} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("manifests", nargs="+", type=Path)
    for item in parser.parse_args().manifests:
        pin(item)
