"""Provisioned Coq/Rocq toolchains: pinned Debian roots in the user's cache, run through bwrap.

`manifest` reads the pinned package lists shipped here, `provision` installs and removes
roots, `toolchain` is what a backend asks to run `coqc`/`coqtop`/`coqchk` in one, `prepare`
maps a task's text to a toolchain's library names. See docs/decisions.md ("Toolchains").
"""
