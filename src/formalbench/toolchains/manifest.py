"""The pinned manifests shipped with formalbench: which exact Debian packages make a toolchain.

A manifest is a JSON file in `manifests/` (package data), written by `scripts/pin_toolchain.py`
from Debian's package index and never edited by hand except its `request`/`overrides`/`smoke`
part. Each package is pinned by version, pool path, size and SHA-256: the installer needs no
resolver and no apt on the user's machine, and a file that is not byte for byte the one pinned
is refused (the hash shipped in the package is the trust anchor, in place of apt's signed
index chain, which it was taken from).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from formalbench.core.errors import InputError

HOST = "host"  # the toolchain that is whatever `coqc` is on PATH


@dataclass(frozen=True)
class PinnedPackage:
    name: str
    version: str
    filename: str  # path in the archive, e.g. pool/main/c/coq/coq_9.2.0+dfsg-4_amd64.deb
    size: int
    sha256: str
    installed_kib: int = 0

    @property
    def deb_name(self) -> str:
        return self.filename.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Manifest:
    name: str
    description: str
    mirror: str
    suites: list[str]
    request: list[str]
    libraries: list[str]  # the packages a verdict names (the library stack), besides Coq itself
    smoke: dict[str, str]  # file name -> Coq text that must compile for the root to count
    generated: str
    packages: list[PinnedPackage] = field(default_factory=list)
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)

    def version_of(self, package: str) -> str | None:
        return next((p.version for p in self.packages if p.name == package), None)

    def download_bytes(self) -> int:
        return sum(p.size for p in self.packages)

    def installed_bytes(self) -> int:
        return sum(p.installed_kib for p in self.packages) * 1024


def _from_json(data: dict[str, Any]) -> Manifest:
    packages = [PinnedPackage(**p) for p in data.get("packages", [])]
    return Manifest(
        name=data["name"],
        description=data.get("description", ""),
        mirror=data.get("mirror", "https://deb.debian.org/debian"),
        suites=list(data["suites"]),
        request=list(data["request"]),
        libraries=list(data.get("libraries", [])),
        smoke=dict(data.get("smoke", {})),
        generated=data.get("generated", ""),
        packages=packages,
        overrides=dict(data.get("overrides", {})),
    )


def to_json(manifest: Manifest) -> dict[str, Any]:
    """The manifest as written to its file (the generator's output)."""
    return {
        "name": manifest.name,
        "description": manifest.description,
        "mirror": manifest.mirror,
        "suites": manifest.suites,
        "request": manifest.request,
        "overrides": manifest.overrides,
        "libraries": manifest.libraries,
        "smoke": manifest.smoke,
        "generated": manifest.generated,
        "packages": [vars(p) for p in manifest.packages],
    }


def names() -> list[str]:
    """The toolchains formalbench can install (one manifest each), sorted."""
    folder = resources.files("formalbench.toolchains") / "manifests"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load(name: str) -> Manifest:
    """The shipped manifest `name`; an InputError naming the known ones when there is none."""
    known = names()
    if name not in known:
        raise InputError(
            f"unknown toolchain {name!r}: formalbench can install {', '.join(known)}"
            f" (and `{HOST}` is the coqc on PATH)"
        )
    text = (resources.files("formalbench.toolchains") / "manifests" / f"{name}.json").read_text(
        encoding="utf-8"
    )
    return _from_json(json.loads(text))
