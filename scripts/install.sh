#!/usr/bin/env bash
# Install formalbench and the proof assistant that runs on these machines (Coq, from Debian)
# on a fresh machine. `--test` adds what the test suite needs.
# Lean 4 cannot be installed from a package registry (elan downloads it); formalbench's Lean
# backend finds a toolchain you installed yourself (see README, "Lean").
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
if [ "${1:-}" = "--test" ]; then
  extras="[test]"
fi

need_apt=()
command -v coqc >/dev/null 2>&1 || need_apt+=(coq)
dpkg -s libcoq-coquelicot >/dev/null 2>&1 || need_apt+=(libcoq-coquelicot)
# OCaml and Coq's own API, to build the assumptions plugin the warm coqtop asks
# (backends/coq_assumptions_plugin.py; without them, `Print Assumptions` is used).
command -v coqpp >/dev/null 2>&1 || need_apt+=(libcoq-core-ocaml-dev)
command -v ocamlfind >/dev/null 2>&1 || need_apt+=(ocaml-findlib)
# The sandbox of every proof-assistant process (read-only file system, no network).
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
# The dashboard's end-to-end tests drive Debian's Chromium through Playwright.
if [ -n "$extras" ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e ".${extras}"
# Compile the shipped AMBER library once (`From Formalbench Require Import Amber.`), so the
# first check does not pay for it; it lands in the per-user cache (backends/coq_library.py).
formalbench library path --backend coq >/dev/null
# Build the assumptions plugin for this Coq once (a per-user cache, like the library).
python3 -c "from formalbench.backends.coq_assumptions_plugin import plugin_folder as p; p('coqtop')"
# The default toolchain for verdicts: Rocq 9.2 and its libraries, a pinned Debian root in the
# per-user cache, run through bwrap (README, "Toolchains"; rootless, ~1.8 GiB, a few minutes).
# FORMALBENCH_NO_TOOLCHAIN=1 skips it (verdicts then run on the host's coqc).
if [ "${FORMALBENCH_NO_TOOLCHAIN:-0}" != "1" ]; then
  formalbench toolchain install rocq-9.2
  python3 -c "from formalbench.backends.coq_library import compiled_library as c
from formalbench.toolchains.toolchain import resolve
c(resolve('rocq-9.2'))"
fi
echo "formalbench installed: $(command -v formalbench); host $(coqc --version | head -n 1)"
formalbench toolchain list
