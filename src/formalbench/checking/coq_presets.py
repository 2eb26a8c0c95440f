"""Named sets of library axioms a Coq proof may rest on, each checked against the running Coq.

A preset is a list of fully qualified axiom names, written per toolchain family (Coq 8's
standard library is `Coq.*`; Rocq 9's is `Stdlib.*`, its primitive types and their axioms
`Corelib.*`), never matched by a short name or a suffix. What the names are is not taken on trust: `verify_presets` asks the running Coq,
once per toolchain (kept in memory and in the user cache), `Print Assumptions` of

- every listed name: the kernel must list that very constant among its own assumptions,
  as an axiom (a name that is missing, renamed, a lemma or a definition here is not
  confirmed);
- known library lemmas (`Preset.probes`): the kernel must report exactly the axioms written
  beside each (Raxioms.completeness rests on the two ClassicalDedekindReals axioms and
  functional extensionality). A version that renames or adds an axiom fails there, and
  the test that runs this on the host's Coq says so.

The allow-list a verdict uses (`allowed_names`) is the names of the chosen presets that the
kernel confirmed, plus the explicit names (`--allow-axiom`, a task's `allowed_axioms`): a
name the running Coq did not confirm is not allowed, so an axiom renamed in another version
is refused and named, never let through under its old name. The cache file can only take
names away (it is intersected with the tables below), never add one.

`DEFAULT_PRESETS` is the default (`docs/decisions.md`, "Coq axioms by allow-list"): the
standard library's classical, extensionality, proof-irrelevance, UIP, choice/description,
reals and primitive-type axioms, and mathcomp-classical's three (the same principles, for
mathcomp-analysis tasks such as PutnamBench-Coq's). Together they hold in the usual
set-theoretic model of Coq, so they cannot prove `False` together; what is refused by
default is every other axiom: `Coq.Compat.AdmitAxiom.proof_admitted`, the `Admitted` lemmas
of any library, any library's own `Axiom`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.core.config import cache_path
from formalbench.core.errors import InputError
from formalbench.toolchains.toolchain import Toolchain

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preset:
    """A named set of axioms: `axioms` fully qualified; `probes`: library lemmas (full
    names) and the exact axioms the kernel reports for each; `requires`: the libraries to
    `Require` for both."""

    name: str
    summary: str
    axioms: tuple[str, ...]
    probes: Mapping[str, frozenset[str]]
    requires: tuple[str, ...]


@dataclass(frozen=True)
class _Primitives:
    """Where a family keeps its primitive types and the axioms that specify them (Rocq 9
    moved them to `Corelib`, the axioms to modules of their own, and added strings)."""

    ints: str  # PrimInt63
    uint: str  # Uint63's axioms
    sint: str  # Sint63's axioms
    floats: str  # PrimFloat
    float_axioms: str
    arrays: str  # the primitive array type and operations
    array_axioms: str
    strings: tuple[str, str] | None = None  # PrimString and its axioms


_COQ8 = _Primitives(
    "Coq.Numbers.Cyclic.Int63.PrimInt63",
    "Coq.Numbers.Cyclic.Int63.Uint63",
    "Coq.Numbers.Cyclic.Int63.Sint63",
    "Coq.Floats.PrimFloat",
    "Coq.Floats.FloatAxioms",
    "Coq.Array.PArray",
    "Coq.Array.PArray",
)
_ROCQ9 = _Primitives(
    "Corelib.Numbers.Cyclic.Int63.PrimInt63",
    "Corelib.Numbers.Cyclic.Int63.Uint63Axioms",
    "Corelib.Numbers.Cyclic.Int63.Sint63Axioms",
    "Corelib.Floats.PrimFloat",
    "Corelib.Floats.FloatAxioms",
    "Corelib.Array.PrimArray",
    "Corelib.Array.ArrayAxioms",
    ("Corelib.Strings.PrimString", "Corelib.Strings.PrimStringAxioms"),
)


def _stdlib(s: str, prim: _Primitives) -> list[Preset]:
    """The standard library's presets under its root name `s` (`Coq`, `Stdlib`), its
    primitives where `prim` says."""
    classic = f"{s}.Logic.Classical_Prop.classic"
    funext = f"{s}.Logic.FunctionalExtensionality.functional_extensionality_dep"
    propext = f"{s}.Logic.PropExtensionality.propositional_extensionality"
    ensembles = f"{s}.Sets.Ensembles.Extensionality_Ensembles"
    irrelevance = f"{s}.Logic.ProofIrrelevance.proof_irrelevance"
    eq_rect_eq = f"{s}.Logic.Eqdep.Eq_rect_eq.eq_rect_eq"
    cid = f"{s}.Logic.IndefiniteDescription.constructive_indefinite_description"
    classical_cid = f"{s}.Logic.ClassicalEpsilon.constructive_indefinite_description"
    cdd = f"{s}.Logic.Description.constructive_definite_description"
    epsilon = f"{s}.Logic.Epsilon.epsilon_statement"
    relational = f"{s}.Logic.RelationalChoice.relational_choice"
    unique = f"{s}.Logic.ClassicalUniqueChoice.dependent_unique_choice"
    representative = (
        f"{s}.Logic.ExtensionalFunctionRepresentative.extensional_function_representative"
    )
    forall_dec = f"{s}.Reals.ClassicalDedekindReals.sig_forall_dec"
    not_dec = f"{s}.Reals.ClassicalDedekindReals.sig_not_dec"
    uint, floats, prim_int, prim_float = prim.uint, prim.float_axioms, prim.ints, prim.floats
    arrays, array_axioms = prim.arrays, prim.array_axioms
    strings = (
        (
            *(f"{prim.strings[0]}.{n}" for n in _PRIM_STRING),
            *(f"{prim.strings[1]}.{n}" for n in _STRING_AXIOMS),
        )
        if prim.strings
        else ()
    )
    primitive = (
        *(f"{prim_int}.{n}" for n in _PRIM_INT63),
        *(f"{prim_float}.{n}" for n in _PRIM_FLOAT),
        *(f"{arrays}.{n}" for n in _PRIM_ARRAY),
        *(f"{uint}.{n}" for n in _UINT63),
        *(f"{prim.sint}.{n}" for n in _SINT63),
        *(f"{floats}.{n}" for n in _FLOATS),
        *(f"{array_axioms}.{n}" for n in _PARRAY),
        *strings,
    )
    # the library modules the probes are lemmas of
    uint_lemmas, array_lemmas = f"{s}.Numbers.Cyclic.Int63.Uint63", f"{s}.Array.PArray"
    return [
        Preset(
            "classical",
            "excluded middle (Classical_Prop.classic)",
            (classic,),
            {
                f"{s}.Logic.Classical_Prop.NNPP": frozenset({classic}),
                f"{s}.Logic.Classical_Pred_Type.not_all_ex_not": frozenset({classic}),
            },
            (f"{s}.Logic.Classical_Prop", f"{s}.Logic.Classical_Pred_Type"),
        ),
        Preset(
            "extensionality",
            "functional and propositional extensionality, extensionality of Ensembles",
            (funext, propext, ensembles),
            {
                f"{s}.Logic.FunctionalExtensionality.functional_extensionality": frozenset(
                    {funext}
                ),
                f"{s}.Logic.PropExtensionality.proof_irrelevance": frozenset({propext}),
                f"{s}.Sets.Powerset_facts.Union_commutative": frozenset({ensembles}),
            },
            (
                f"{s}.Logic.FunctionalExtensionality",
                f"{s}.Logic.PropExtensionality",
                f"{s}.Sets.Powerset_facts",
            ),
        ),
        Preset(
            "proof-irrelevance",
            "proof irrelevance (ProofIrrelevance.proof_irrelevance)",
            (irrelevance,),
            {
                f"{s}.Logic.ProofIrrelevance.ProofIrrelevanceTheory.subset_eq_compat": (
                    frozenset({irrelevance})
                ),
            },
            (f"{s}.Logic.ProofIrrelevance",),
        ),
        Preset(
            "uip",
            "uniqueness of identity proofs (Eqdep.Eq_rect_eq.eq_rect_eq; JMeq_eq rests on it)",
            (eq_rect_eq,),
            {
                f"{s}.Logic.Eqdep.EqdepTheory.UIP_refl": frozenset({eq_rect_eq}),
                f"{s}.Logic.JMeq.JMeq_eq": frozenset({eq_rect_eq}),
            },
            (f"{s}.Logic.Eqdep", f"{s}.Logic.JMeq"),
        ),
        Preset(
            "choice",
            "choice, description and epsilon (IndefiniteDescription, ClassicalEpsilon, "
            "Description, Epsilon, RelationalChoice, ClassicalUniqueChoice, "
            "ExtensionalFunctionRepresentative)",
            (cid, classical_cid, cdd, epsilon, relational, unique, representative),
            {
                f"{s}.Logic.IndefiniteDescription.functional_choice": frozenset({cid}),
                f"{s}.Logic.Epsilon.iota_statement": frozenset({epsilon}),
                f"{s}.Logic.ClassicalEpsilon.excluded_middle_informative": frozenset(
                    {classical_cid, classic}
                ),
                f"{s}.Logic.ClassicalChoice.choice": frozenset({relational, unique}),
            },
            (
                f"{s}.Logic.IndefiniteDescription",
                f"{s}.Logic.ClassicalEpsilon",
                f"{s}.Logic.Description",
                f"{s}.Logic.Epsilon",
                f"{s}.Logic.RelationalChoice",
                f"{s}.Logic.ClassicalChoice",
                f"{s}.Logic.ExtensionalFunctionRepresentative",
            ),
        ),
        Preset(
            "reals",
            "the axioms the standard library's real numbers rest on",
            (forall_dec, not_dec, funext),
            {
                f"{s}.Reals.Raxioms.completeness": frozenset({forall_dec, not_dec, funext}),
                f"{s}.Reals.RIneq.Rinv_r": frozenset({forall_dec, funext}),
            },
            (f"{s}.Reals.Reals",),
        ),
        Preset(
            "primitive",
            "the primitive integers, floats, arrays (and strings in Rocq 9: `Print "
            "Assumptions` lists each primitive a proof uses) and the axioms that specify them",
            primitive,
            {
                f"{uint_lemmas}.eqb_spec": frozenset(
                    {
                        f"{prim_int}.int",
                        f"{prim_int}.eqb",
                        f"{uint}.eqb_correct",
                        f"{uint}.eqb_refl",
                    }
                ),
                f"{array_lemmas}.default_copy": frozenset(
                    {
                        *(f"{prim_int}.{n}" for n in ("int", "eqb", "land", "lsr", "ltb")),
                        *(f"{arrays}.{n}" for n in ("array", "copy", "default", "get", "length")),
                        *(f"{array_axioms}.{n}" for n in ("get_copy", "length_copy")),
                        f"{array_axioms}.get_out_of_bounds",
                        f"{uint}.ltb_spec",
                    }
                ),
                f"{s}.Floats.FloatLemmas.Z_ldexp_spec": frozenset(
                    {
                        *(f"{prim_float}.{n}" for n in _LDEXP_FLOAT),
                        *(f"{prim_int}.{n}" for n in _LDEXP_INT),
                        *(f"{uint}.{n}" for n in _LDEXP_UINT),
                        f"{floats}.Prim2SF_valid",
                        f"{floats}.ldshiftexp_spec",
                    }
                ),
            },
            (
                *sorted({prim_int, prim_float, uint, prim.sint, floats, arrays, array_axioms}),
                *(prim.strings or ()),
                uint_lemmas,
                array_lemmas,
                f"{s}.Floats.FloatLemmas",
            ),
        ),
    ]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_PRIM_INT63 = _words(
    "int lsl lsr land lor lxor asr add sub mul mulc div mod divs mods eqb ltb leb "
    "ltsb lesb addc addcarryc subc subcarryc diveucl diveucl_21 addmuldiv compare "
    "compares head0 tail0"
)
_PRIM_FLOAT = _words(
    "float classify abs sqrt opp eqb ltb leb compare Leibniz.eqb mul add sub div "
    "of_uint63 normfr_mantissa frshiftexp ldshiftexp next_up next_down"
)
_PRIM_ARRAY = _words("array make get default set length copy")  # not max_length: a value
# what FloatLemmas.Z_ldexp_spec rests on, as Coq 8.16 reports it
_LDEXP_FLOAT = ["abs", "div", "eqb", "float", "frshiftexp", "ldshiftexp", "ltb", "normfr_mantissa"]
_LDEXP_INT = ["add", "eqb", "int", "land", "leb", "lor", "lsl", "lsr", "ltb", "sub"]
_LDEXP_UINT = _words(
    "add_spec eqb_correct eqb_refl leb_spec lor_spec lsl_spec lsr_spec ltb_spec of_to_Z sub_spec"
)
_PRIM_STRING = _words("string make length get sub cat compare")  # not max_length: a value
_STRING_AXIOMS = _words(
    "of_to_list to_list_length to_list_char63_valid length_spec get_spec make_spec "
    "sub_spec cat_spec compare_spec"
)
_UINT63 = _words(
    "of_to_Z lsl_spec lsr_spec land_spec lor_spec lxor_spec add_spec sub_spec "
    "mul_spec mulc_spec div_spec mod_spec eqb_correct eqb_refl ltb_spec leb_spec "
    "compare_def_spec head0_spec tail0_spec addc_def_spec addcarryc_def_spec "
    "subc_def_spec subcarryc_def_spec diveucl_def_spec diveucl_21_spec "
    "addmuldiv_def_spec"
)
_SINT63 = ["asr_spec", "div_spec", "mod_spec", "ltb_spec", "leb_spec", "compare_spec"]
_FLOATS = _words(
    "Prim2SF_valid SF2Prim_Prim2SF Prim2SF_SF2Prim opp_spec abs_spec eqb_spec "
    "ltb_spec leb_spec compare_spec Leibniz.eqb_spec classify_spec mul_spec add_spec "
    "sub_spec div_spec sqrt_spec of_uint63_spec normfr_mantissa_spec frshiftexp_spec "
    "ldshiftexp_spec next_up_spec next_down_spec"
)
_PARRAY = _words(
    "get_out_of_bounds get_set_same get_set_other default_set get_make leb_length "
    "length_make length_set get_copy length_copy array_ext"
)

_BOOLP = "mathcomp.classical.boolp"
_MATHCOMP = Preset(
    "mathcomp-classical",
    "mathcomp-classical's (boolp) functional and propositional extensionality and "
    "indefinite description, which mathcomp-analysis rests on",
    tuple(
        f"{_BOOLP}.{n}"
        for n in (
            "functional_extensionality_dep",
            "propositional_extensionality",
            "constructive_indefinite_description",
        )
    ),
    {
        f"{_BOOLP}.{lemma}": frozenset(
            {f"{_BOOLP}.propositional_extensionality", f"{_BOOLP}.functional_extensionality_dep"}
        )
        for lemma in ("propext", "funext")
    }
    | {
        f"{_BOOLP}.pselect": frozenset(
            {
                f"{_BOOLP}.propositional_extensionality",
                f"{_BOOLP}.functional_extensionality_dep",
                f"{_BOOLP}.constructive_indefinite_description",
            }
        )
    },
    (_BOOLP,),
)

# The presets of each toolchain family, by name.
PRESETS: dict[str, dict[str, Preset]] = {
    family: {p.name: p for p in [*_stdlib(root, prim), _MATHCOMP]}
    for family, root, prim in (("coq8", "Coq", _COQ8), ("rocq9", "Stdlib", _ROCQ9))
}
DEFAULT_PRESETS: tuple[str, ...] = (
    "classical",
    "extensionality",
    "proof-irrelevance",
    "uip",
    "choice",
    "reals",
    "primitive",
    "mathcomp-classical",
)
# `--allow-axioms standard` names the default; `none` names no preset.
ALIASES: dict[str, tuple[str, ...]] = {"standard": DEFAULT_PRESETS, "none": ()}
PRESET_NAMES: tuple[str, ...] = (*DEFAULT_PRESETS, *ALIASES)


def family_of(version: str) -> str | None:
    """The preset family of a Coq/Rocq version (`8.16.1` -> coq8, `9.2.0` -> rocq9)."""
    major = version.split(".", 1)[0]
    if major == "8":
        return "coq8"
    if major.isdigit() and int(major) >= 9:
        return "rocq9"
    return None


def expand(names: Iterable[str]) -> list[str]:
    """Preset names with the aliases unfolded (`standard`, `none`), in order, once each;
    an unknown name raises InputError (bad input: one line, naming the known ones)."""
    out: list[str] = []
    for name in names:
        if name not in PRESET_NAMES:
            raise InputError(f"unknown axiom preset {name!r} (known: {', '.join(PRESET_NAMES)})")
        for p in ALIASES.get(name, (name,)):
            if p not in out:
                out.append(p)
    return out


_QUALID = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)+")


def check_axiom_name(name: str) -> str:
    """An explicit allow-list entry: a fully qualified name (`Coq.Logic.Classical_Prop.
    classic`), not of the files the verifier compiles (`Candidate.x` is the candidate's to
    define: a task's own axioms are allowed as its postulates, pinned, never by name)."""
    from formalbench.checking.coq_axioms import CHECKED_LIBRARIES

    if not _QUALID.fullmatch(name):
        raise InputError(
            f"axiom {name!r}: not a fully qualified name (e.g. Coq.Logic.Classical_Prop.classic)"
        )
    if name.split(".", 1)[0] in CHECKED_LIBRARIES:
        raise InputError(
            f"axiom {name!r}: a name of the files the verifier compiles, which the candidate "
            "defines; a task's own axioms are allowed as its postulates"
        )
    return name


@dataclass
class PresetCheck:
    """What the running Coq said of the presets: `confirmed`, the listed names it reports
    as axioms by that full name; `probes`, what it reported for each probe lemma;
    `problems`, each disagreement in words; `skipped`, presets whose library is absent."""

    version: str
    family: str | None
    confirmed: set[str] = field(default_factory=set)
    probes: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    complete: bool = False  # Coq answered (a run cut short is not kept in the cache)


_memo: dict[str, PresetCheck] = {}
_memo_lock = threading.Lock()


def verify_presets(
    toolchain: Toolchain | str | None = None,
    timeout: float = 300.0,
    *,
    cached: bool = True,
) -> PresetCheck:
    """The presets of a toolchain's family (a `Toolchain`, its name, None for the default
    one) checked against its Coq (see the module's docstring): one coqc run (more only
    where a library is missing), once per toolchain (its key: name, version, library
    versions), kept in memory and in `cache_path("axiom-presets")`. The query file is
    compiled by a `CoqBackend` of that toolchain with no project on its load path."""
    from formalbench.toolchains.toolchain import resolve

    chain = toolchain if isinstance(toolchain, Toolchain) else resolve(toolchain)
    version = chain.version()
    family = family_of(version)
    digest = json.dumps([chain.key(), chain.program("coqc"), _table_digest(family)]).encode()
    key = hashlib.sha256(digest).hexdigest()[:24]
    with _memo_lock:
        if cached and key in _memo:
            return _memo[key]
        file = cache_path("axiom-presets") / f"{key}.json"
        found = _load(file, version, family) if cached else None
        if found is None:
            found = _run(chain, version, family, timeout)
            if found.complete:
                _store(file, found)
            if found.problems:  # said once per process: a preset name it concerns is refused
                log.warning(
                    "axiom presets on Coq %s: %s", version, "; ".join(found.problems)[:2000]
                )
        _memo[key] = found
        return found


def allowed_names(
    presets: Sequence[str] | None,
    extra: Iterable[str],
    toolchain: Toolchain | None,
    load_args: Sequence[str] = (),
) -> frozenset[str]:
    """The allow-list of a verdict: the names of `presets` (None: the default) that the
    toolchain's Coq confirmed (`verify_presets`; none without a toolchain), less those a
    binding of `load_args` (the coqc arguments of the checks: a project's `-Q`/`-R`) could
    provide instead of the library that was checked (`shadowed`), and `extra` (by the names
    the toolchain's kernel prints: `Coq.X` on Rocq 9 is `Stdlib.X`/`Corelib.X`, `Stdlib.X`
    on Coq 8 is `Coq.X`; `toolchains.prepare.names_for`)."""
    from formalbench.toolchains.prepare import names_for

    explicit = set(extra) if toolchain is None else names_for(toolchain, extra)
    names = set(explicit)
    chosen = expand(DEFAULT_PRESETS if presets is None else presets)
    if toolchain is None or not chosen:
        return frozenset(names)
    check = verify_presets(toolchain)
    table = PRESETS.get(check.family or "", {})
    for name in chosen:
        names.update(a for a in table[name].axioms if a in check.confirmed)
    return frozenset(n for n in names if n in explicit or not shadowed(n, load_args))


def shadowed(name: str, load_args: Sequence[str]) -> bool:
    """Whether coqc run with `load_args` may load `name` from a file other than the one
    the presets were checked on: a `-Q`/`-R` binding whose logical name is `name`'s or a
    prefix of it (`-Q dir Coq.Logic` puts a `Classical_Prop.v` of the project's where
    Coq's was, `classic : False` in it), an empty logical name (any name below the folder),
    or a changed library root (`-coqlib`, `-boot`, `-noinit`). A preset name is then not
    allowed by the preset: a project's own copy of the library needs `--allow-axiom`."""
    args = list(load_args)
    if any(a in ("-coqlib", "-boot", "-noinit", "-nois") for a in args):
        return True
    for at, flag in enumerate(args[:-2]):
        if flag in ("-Q", "-R"):
            logical = args[at + 2].strip()
            if logical in ("", ".") or name == logical or name.startswith(f"{logical}."):
                return True
    return False


def _table_digest(family: str | None) -> str:
    table = PRESETS.get(family or "", {})
    text = json.dumps(
        {
            n: [sorted(p.axioms), {k: sorted(v) for k, v in p.probes.items()}]
            for n, p in table.items()
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _load(file: Path, version: str, family: str | None) -> PresetCheck | None:
    try:
        data = json.loads(file.read_text())
        check = PresetCheck(version, family, **data)
        check.confirmed = set(check.confirmed)
    except (OSError, ValueError, TypeError):
        return None
    known = {a for p in PRESETS.get(family or "", {}).values() for a in p.axioms}
    check.confirmed &= known  # a planted file can take names away, never add one
    check.complete = True
    return check


def _store(file: Path, check: PresetCheck) -> None:
    data = {
        "confirmed": sorted(check.confirmed),
        "probes": check.probes,
        "problems": check.problems,
        "skipped": check.skipped,
    }
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, file)
    except OSError as why:  # a read-only cache only costs a run per process
        log.info("axiom presets not cached (%s)", why)


def _run(toolchain: Toolchain, version: str, family: str | None, timeout: float) -> PresetCheck:
    """Ask Coq: one query file, run again without what it could not load or find."""
    from formalbench.backends.coq import CoqBackend
    from formalbench.backends.coq_assumptions import query_file
    from formalbench.backends.coq_queries import basename
    from formalbench.backends.sandbox import work_dir

    check = PresetCheck(version, family)
    presets = list(PRESETS.get(family or "", {}).values())
    if not presets:
        check.problems.append(f"no presets are written for Coq {version}")
        check.complete = True
        return check
    missing: set[str] = set()  # names or probes Coq does not know
    located: set[str] = set()  # basenames printed but not among the names located first
    # the bare toolchain: no project's load path can stand in for the standard library
    backend = CoqBackend(toolchain=toolchain, workers=1, timeout=timeout)
    known: set[str] | None = None  # the full names Locate lists (first run: Locate only)
    try:
        for _ in range(len(presets) + 8):
            requires = sorted({r for p in presets for r in p.requires})
            wanted = [x for p in presets for x in (*p.axioms, *p.probes)]
            subjects = {} if known is None else {x: x for x in wanted if x not in missing}
            names = sorted({basename(x) for x in wanted} | located)
            text = "".join(f"Require {r}.\n" for r in requires)
            with work_dir("coq") as work:
                run = query_file(
                    backend, Path(work), "FbAxiomPresets", text, subjects, names, timeout, ()
                )
            if run.undecided is None and known is None:
                # a name Coq does not have is not asked (`Print Assumptions` of it would
                # stop the file): reported and dropped here, all at once
                known = {o.path for found in run.located.values() for o in found}
                for x in wanted:
                    if x not in known and x not in missing:
                        missing.add(x)
                        check.problems.append(f"`{x}` does not exist in Coq {version}")
                continue
            if run.undecided is None:
                unknown = {
                    basename(p) for ps in run.printed.values() for p in ps if run.path(p) is None
                }
                if unknown <= set(names) | located:
                    break
                located |= unknown
                continue
            library = re.search(r"logical path (\S+?)\.?(?:\s|$)", run.undecided)
            reference = re.search(r"[Tt]he reference (\S+) was not found", run.undecided)
            if library is not None:
                gone = [p for p in presets if any(r.startswith(library[1]) for r in p.requires)]
                if not gone:
                    gone = [p for p in presets if library[1] in " ".join(p.requires)]
                if not gone:
                    check.problems.append(run.undecided)
                    return check
                check.skipped += [p.name for p in gone]
                presets = [p for p in presets if p not in gone]
            elif reference is not None and reference[1] in subjects:
                missing.add(reference[1])
                check.problems.append(f"`{reference[1]}` does not exist in Coq {version}")
            else:
                check.problems.append(f"Coq gave no answer: {run.undecided}"[:500])
                return check
        else:
            check.problems.append("Coq gave no answer after dropping what it lacks")
            return check
    finally:
        backend.close()
    reported = {
        s: [run.path(p) or f"<unresolved {p}>" for p in ps] for s, ps in run.printed.items()
    }
    for p in presets:
        for axiom in p.axioms:
            if axiom in missing:
                continue
            # an assumption of itself, of kind axiom: an axiom or a primitive (a lemma or a
            # definition is not; Rocq 9 also lists what the axiom's own type rests on)
            bypassed = {run.path(p) or p for p in run.kinds.get(axiom, {})}
            if axiom in reported.get(axiom, []) and axiom not in bypassed:
                check.confirmed.add(axiom)
            else:
                check.problems.append(
                    f"preset {p.name}: `{axiom}` is not an axiom of that name in Coq "
                    f"{version} (its assumptions: {reported.get(axiom)})"
                )
        for probe, expected in p.probes.items():
            if probe in missing:
                continue
            got = reported.get(probe, [])
            check.probes[probe] = got
            if set(got) != expected:
                check.problems.append(
                    f"preset {p.name}: `{probe}` rests on {sorted(got)} in Coq {version}, "
                    f"where {sorted(expected)} is written"
                )
    check.complete = True
    return check
