(* formalbench: the kernel objects of Rocq 9.2 as JSON (format: kdump-format.md, v1, with
   its 9.2 forms: QSort sorts, sort-variable relevances and instance qualities written "q:...",
   primitive strings, `symbol` constants, squashing as `kelim`, 9.2 template data).

   With fb_memo.ml, the code written against the version-specific parts of the kernel API
   (the shape of Constr.kind, sorts, universe levels and instances, universe contexts,
   typing flags, inductive bodies, the constructors of Printer.context_object). A build for
   another Coq/Rocq puts its own pair in a folder of its own (coq_assumptions_plugin's
   API_FOLDERS) that defines the same values (hooks, term, constant_*, mind*, flags,
   unsafe_words, assumptions, coq_assumptions, entails_le/lt, the names), so that
   fb_dump.ml and the commands build unchanged.

   Every term is written by walking Constr.t: full canonical kernel names, universe levels
   by their raw names (`Candidate.12`, `Var(0)`), binder names dropped (comparison is up to
   alpha), binder relevances kept. [hooks] are told every constant, inductive and level a
   written term mentions, so that the caller can follow the closure and gather levels. *)

open Names
module J = Fb_json

(* opaque bodies as Print Assumptions reads them (deprecated for commands in 8.20, still
   what vernac/assumptions.ml is given) *)
let accessor = (Library.indirect_accessor [@alert "-deprecated"])

type hooks = {
  const : Constant.t -> unit;
  mind : MutInd.t -> unit;
  level : Univ.Level.t -> unit;
}

let no_hooks = { const = ignore; mind = ignore; level = ignore }

(* A functor parameter (an MBId) prints as `<dirpath>.<X>`, with no counter: two parameters
   named X print alike. While it dumps the objects of functors and module types, fb_dump
   gives each parameter a canonical, unique spelling here (None: Coq's own). *)
let bound_name : (MBId.t -> string option) ref = ref (fun _ -> None)

let rec modpath_name = function
  | MPfile dp -> DirPath.to_string dp
  | MPbound id -> (match !bound_name id with Some s -> s | None -> MBId.to_string id)
  | MPdot (mp, l) -> modpath_name mp ^ "." ^ Id.to_string l

let kn_name kn =
  let mp, l = KerName.repr kn in
  modpath_name mp ^ "." ^ Id.to_string l

let const_name c = kn_name (Constant.canonical c)
let user_const_name c = kn_name (Constant.user c)
let mind_name m = kn_name (MutInd.canonical m)
let level_name l = Univ.Level.to_string l

let level h l = h.level l; J.Str (level_name l)

(* sort variables by an ASCII name of ours: bound ones by position, like levels' Var(n) *)
let qvar_name q =
  match Sorts.QVar.repr q with
  | Sorts.QVar.Var n -> Printf.sprintf "QVar(%d)" n
  | Sorts.QVar.Unif (s, n) -> Printf.sprintf "Unif(%s,%d)" s n
  | Sorts.QVar.Global g -> Sorts.QGlobal.to_string g

let quality_name = function
  | Sorts.Quality.QConstant Sorts.Quality.QProp -> "q:Prop"
  | Sorts.Quality.QConstant Sorts.Quality.QSProp -> "q:SProp"
  | Sorts.Quality.QConstant Sorts.Quality.QType -> "q:Type"
  | Sorts.Quality.QVar q -> "q:" ^ qvar_name q

(* qualities first (none for a universe-only instance: then as 8.16 writes it), levels after *)
let instance h u =
  let qs, ls = UVars.Instance.to_array u in
  J.List
    (List.map (fun q -> J.Str (quality_name q)) (Array.to_list qs)
    @ List.map (level h) (Array.to_list ls))

let universe h u =
  J.list (fun (l, k) -> J.List [ level h l; J.Int k ]) (Univ.Universe.repr u)

let sort h (s : Sorts.t) =
  match s with
  | Sorts.SProp -> J.Str "SProp"
  | Sorts.Prop -> J.Str "Prop"
  | Sorts.Set -> J.Str "Set"
  | Sorts.Type u -> J.List [ J.Str "Type"; universe h u ]
  | Sorts.QSort (q, u) -> J.List [ J.Str "QSort"; J.Str (qvar_name q); universe h u ]

let relevance = function
  | Sorts.Relevant -> J.Str "R"
  | Sorts.Irrelevant -> J.Str "I"
  | Sorts.RelevanceVar q -> J.Str ("q:" ^ qvar_name q)

let relevance_word = function
  | Sorts.Relevant -> J.Str "Relevant"
  | Sorts.Irrelevant -> J.Str "Irrelevant"
  | Sorts.RelevanceVar q -> J.Str ("q:" ^ qvar_name q)

(* a primitive string's bytes, exactly (JSON strings could not carry every byte) *)
let hex s = String.concat "" (List.map (fun c -> Printf.sprintf "%02x" (Char.code c)) (List.of_seq (String.to_seq s)))

let cast_kind = function
  | Constr.VMcast -> "VM"
  | Constr.NATIVEcast -> "NATIVE"
  | Constr.DEFAULTcast -> "DEFAULT"

let rec term h c =
  let t = term h in
  let open J in
  match Constr.kind c with
  | Constr.Rel n -> List [ Str "Rel"; Int n ]
  | Constr.Var id -> List [ Str "Var"; Str (Id.to_string id) ]
  | Constr.Meta _ -> List [ Str "Unknown"; Str "Meta" ]
  | Constr.Evar _ -> List [ Str "Unknown"; Str "Evar" ]
  | Constr.Sort s -> List [ Str "Sort"; sort h s ]
  | Constr.Cast (c, k, ty) -> List [ Str "Cast"; t c; Str (cast_kind k); t ty ]
  | Constr.Prod (na, ty, b) ->
    List [ Str "Prod"; relevance (Context.binder_relevance na); t ty; t b ]
  | Constr.Lambda (na, ty, b) ->
    List [ Str "Lambda"; relevance (Context.binder_relevance na); t ty; t b ]
  | Constr.LetIn (na, v, ty, b) ->
    List [ Str "LetIn"; relevance (Context.binder_relevance na); t v; t ty; t b ]
  | Constr.App (f, args) -> List [ Str "App"; t f; J.array t args ]
  | Constr.Const (cst, u) ->
    h.const cst;
    List [ Str "Const"; Str (const_name cst); instance h u ]
  | Constr.Ind ((m, i), u) ->
    h.mind m;
    List [ Str "Ind"; Str (mind_name m); Int i; instance h u ]
  | Constr.Construct (((m, i), j), u) ->
    h.mind m;
    List [ Str "Construct"; Str (mind_name m); Int i; Int j; instance h u ]
  | Constr.Case (ci, u, pms, ((nas, p), rel), iv, scrut, brs) ->
    let m, i = ci.Constr.ci_ind in
    h.mind m;
    let invert =
      match iv with
      | Constr.NoInvert -> Null
      | Constr.CaseInvert { indices } -> J.array t indices
    in
    List
      [ Str "Case"; Str (mind_name m); Int i; instance h u; J.array t pms;
        List [ Int (Array.length nas); t p ]; invert; t scrut;
        J.array (fun (bnas, b) -> List [ Int (Array.length bnas); t b ]) brs;
        relevance rel ]
  | Constr.Fix ((idx, i), (_, tys, bds)) ->
    List [ Str "Fix"; J.array (fun k -> Int k) idx; Int i; J.array t tys; J.array t bds ]
  | Constr.CoFix (i, (_, tys, bds)) -> List [ Str "CoFix"; Int i; J.array t tys; J.array t bds ]
  | Constr.Proj (p, _rel, c) ->
    (* the relevance 9.2 keeps on Proj is the projection's own, checked by the kernel
       against its record: not written, so that Proj reads as on 8.16 *)
    let cst = Projection.constant p in
    h.const cst;
    h.mind (Projection.mind p);
    List [ Str "Proj"; Str (const_name cst); Bool (Projection.unfolded p); t c ]
  | Constr.Int n -> List [ Str "Int"; Str (Uint63.to_string n) ]
  | Constr.Float f -> List [ Str "Float"; Str (Float64.to_hex_string f) ]
  | Constr.String s -> List [ Str "String"; Str (hex (Pstring.to_string s)) ]
  | Constr.Array (u, elems, def, ty) ->
    List [ Str "Array"; instance h u; J.array t elems; t def; t ty ]

(* a rel_context (kept innermost first by Coq) written outermost first *)
let context h ctx =
  let open Context.Rel.Declaration in
  J.List
    (List.rev_map
       (function
         | LocalAssum (_, ty) -> J.List [ J.Str "assum"; term h ty ]
         | LocalDef (_, v, ty) -> J.List [ J.Str "def"; term h v; term h ty ])
       ctx)

let constraint_word = function
  | Univ.UnivConstraint.Lt -> "<"
  | Univ.UnivConstraint.Le -> "<="
  | Univ.UnivConstraint.Eq -> "="

let constraints h cs =
  J.list
    (fun (l, k, r) -> J.List [ level h l; J.Str (constraint_word k); level h r ])
    (Univ.UnivConstraints.elements cs)

(* a polymorphic context: its levels as on 8.16; where it binds sort variables too (sort
   polymorphism, 9.x), their number and the elimination constraints between qualities *)
let univs h (u : Declarations.universes) =
  match u with
  | Declarations.Monomorphic -> J.Obj [ ("polymorphic", J.Bool false) ]
  | Declarations.Polymorphic ctx ->
    let uctx = UVars.AbstractContext.repr ctx in
    let nq, nu = UVars.AbstractContext.size ctx in
    let pcs = UVars.UContext.constraints uctx in
    let elim = Sorts.ElimConstraints.elements (PConstraints.qualities pcs) in
    let sorts =
      if nq = 0 && elim = [] then []
      else
        [ ("qualities", J.Int nq);
          ( "elim_constraints",
            J.list
              (fun (a, _, b) -> J.List [ J.Str (quality_name a); J.Str (quality_name b) ])
              elim ) ]
    in
    J.Obj
      ([ ("polymorphic", J.Bool true);
         ("size", J.Int nu);
         ("constraints", constraints h (PConstraints.univs pcs)) ]
      @ sorts)

(* ---- typing flags: only those that bear on soundness --------------------------------- *)

let flags (f : Declarations.typing_flags) =
  let open Declarations in
  J.Obj
    [ ("check_guarded", J.Bool f.check_guarded);
      ("check_positive", J.Bool f.check_positive);
      ("check_universes", J.Bool f.check_universes);
      ("allow_uip", J.Bool f.allow_uip);
      ("impredicative_set", J.Bool f.impredicative_set);
      ("indices_matter", J.Bool f.indices_matter);
      ("sprop_allowed", J.Bool f.sprop_allowed);
      (* 9.x has no cumulative SProp at all: the strict answer *)
      ("cumulative_sprop", J.Bool false) ]

(* what a flag set weakens with respect to Coq's defaults (each a word of the format) *)
let unsafe_words (f : Declarations.typing_flags) =
  let open Declarations in
  List.filter_map
    (fun (weak, word) -> if weak then Some word else None)
    [ (not f.check_guarded, "guard");
      (not f.check_positive, "positivity");
      (not f.check_universes, "universes");
      (f.allow_uip, "uip");
      (f.impredicative_set, "impredicative_set") ]

(* ---- constants ------------------------------------------------------------------------ *)

let constant_kind (cb : Declarations.constant_body) =
  match cb.Declarations.const_body with
  | Declarations.Undef _ -> "undef"
  | Declarations.Def _ -> "def"
  | Declarations.OpaqueDef _ -> "opaque"
  | Declarations.Primitive _ -> "primitive"
  | Declarations.Symbol _ -> "symbol"

let constant_type (cb : Declarations.constant_body) = cb.Declarations.const_type
let constant_flags (cb : Declarations.constant_body) = cb.Declarations.const_typing_flags

(* the body the closure follows and records: a transparent body, a primitive's name *)
let constant_body h (cb : Declarations.constant_body) =
  match cb.Declarations.const_body with
  | Declarations.Def c -> term h c
  | Declarations.Primitive p -> J.Str (CPrimitives.to_string p)
  | Declarations.Undef _ | Declarations.OpaqueDef _ | Declarations.Symbol _ -> J.Null

let constant_univs h (cb : Declarations.constant_body) = univs h cb.Declarations.const_universes

(* every constant and inductive a constant's type and transparent body mention *)
let constant_refs h (cb : Declarations.constant_body) =
  ignore (term h cb.Declarations.const_type);
  ignore (constant_body h cb)

(* ---- inductives ----------------------------------------------------------------------- *)

let finite = function
  | Declarations.Finite -> "Finite"
  | Declarations.CoFinite -> "CoFinite"
  | Declarations.BiFinite -> "BiFinite"

let family = function
  | Sorts.SProp -> "SProp"
  | Sorts.Prop -> "Prop"
  | Sorts.Set -> "Set"
  | Sorts.Type _ | Sorts.QSort _ -> "Type"

(* 9.x keeps which eliminations are squashed rather than 8.16's highest elimination sort
   (`mind_kelim`); written in 8.16's words where they mean the same: not squashed, every
   elimination ("Type"); always squashed, only into its own sort ("SProp"/"Prop"/"Set");
   a sort-polymorphic inductive squashed at some instances: "squashed:" and the qualities
   it is squashed into, sorted *)
let kelim (oib : Declarations.one_inductive_body) =
  match oib.Declarations.mind_squashed with
  | None -> "Type"
  | Some Declarations.AlwaysSquashed -> (
    match oib.Declarations.mind_sort with
    | Sorts.QSort (q, _) -> "squashed:always:" ^ qvar_name q
    | s -> family s)
  | Some (Declarations.SometimesSquashed qs) ->
    "squashed:" ^ String.concat "," (List.sort compare (List.map quality_name (Sorts.Quality.Set.elements qs)))

(* 9.x keeps the record information per inductive of the block; written for the block as
   8.16 does (a primitive record's projections, types and relevances, in packet order) *)
let mind_record h mind (mib : Declarations.mutual_inductive_body) =
  let open Declarations in
  let infos = Array.to_list (Array.map (fun oib -> oib.mind_record) mib.mind_packets) in
  let prims =
    List.filter_map
      (function
        | PrimRecord { projections; relevances; tys; _ } -> Some (projections, relevances, tys)
        | _ -> None)
      infos
  in
  if prims <> [] then
    let mp = MutInd.modpath mind in
    let names =
      List.concat_map
        (fun (ps, _, _) -> List.map (fun id -> J.Str (const_name (Constant.make2 mp id))) (Array.to_list ps))
        prims
    in
    let types = List.concat_map (fun (_, _, tys) -> List.map (term h) (Array.to_list tys)) prims in
    let rels = List.concat_map (fun (_, rs, _) -> List.map relevance_word (Array.to_list rs)) prims in
    J.Obj [ ("projections", J.List names); ("types", J.List types); ("relevances", J.List rels) ]
  else if List.exists (function FakeRecord -> true | _ -> false) infos then J.Str "fake"
  else J.Null

(* 9.x template polymorphism binds its levels in an abstract context (8.16 named global
   levels): its own form, {"param_sorts", "concl", "univs", "defaults"} *)
let template h (mib : Declarations.mutual_inductive_body) =
  match mib.Declarations.mind_template with
  | None -> J.Null
  | Some tpl ->
    let open Declarations in
    J.Obj
      [ ("param_sorts", J.list (J.opt (sort h)) tpl.template_param_arguments);
        ("concl", sort h tpl.template_concl);
        ("univs", univs h (Polymorphic tpl.template_context));
        ("defaults", instance h tpl.template_defaults) ]

let variance = function
  | UVars.Variance.Irrelevant -> J.Str "Irrelevant"
  | UVars.Variance.Covariant -> J.Str "Covariant"
  | UVars.Variance.Invariant -> J.Str "Invariant"

let packet h (oib : Declarations.one_inductive_body) =
  let open Declarations in
  J.Obj
    [ ("name", J.Str (Id.to_string oib.mind_typename));
      ("arity_ctxt", context h oib.mind_arity_ctxt);
      ("user_arity", term h oib.mind_user_arity);
      ("sort", sort h oib.mind_sort);
      ("consnames", J.array (fun id -> J.Str (Id.to_string id)) oib.mind_consnames);
      ("user_lc", J.array (term h) oib.mind_user_lc);
      ("nrealargs", J.Int oib.mind_nrealargs);
      ("nrealdecls", J.Int oib.mind_nrealdecls);
      ("kelim", J.Str (kelim oib));
      ("relevance", relevance_word oib.mind_relevance) ]

let mind h mind (mib : Declarations.mutual_inductive_body) =
  let open Declarations in
  J.Obj
    [ ("finite", J.Str (finite mib.mind_finite));
      ("ntypes", J.Int (Array.length mib.mind_packets));
      ("nparams", J.Int mib.mind_nparams);
      ("nparams_rec", J.Int mib.mind_nparams_rec);
      ("params", context h mib.mind_params_ctxt);
      ("record", mind_record h mind mib);
      ("univs", univs h mib.mind_universes);
      ("template", template h mib);
      ("variance", J.opt (J.array variance) mib.mind_variance);
      ("private", J.opt (fun b -> J.Bool b) mib.mind_private);
      ("flags", flags mib.mind_typing_flags);
      ("packets", J.array (packet h) mib.mind_packets) ]

let mind_flags (mib : Declarations.mutual_inductive_body) = mib.Declarations.mind_typing_flags
let mind_ntypes (mib : Declarations.mutual_inductive_body) = Array.length mib.Declarations.mind_packets

(* ---- assumptions, by the constructors of Printer.context_object ---------------------- *)

let globref_name = function
  | GlobRef.ConstRef c -> const_name c
  | GlobRef.IndRef (m, _) | GlobRef.ConstructRef ((m, _), _) -> mind_name m
  | GlobRef.VarRef id -> Id.to_string id

(* one assumption as JSON; None for what is not an assumption (opaque, transparent) *)
let assumption h (obj : Printer.context_object) ty =
  let open Printer in
  let entry kind name = Some (J.Obj [ ("kind", J.Str kind); ("name", J.Str name) ]) in
  match obj with
  | Variable id -> entry "variable" (Id.to_string id)
  | Axiom (Constant c, _) ->
    Some (J.Obj [ ("kind", J.Str "axiom"); ("name", J.Str (const_name c)); ("type", term h ty) ])
  | Axiom (Positive m, _) -> entry "positive" (mind_name m)
  | Axiom (Guarded r, _) -> entry "guarded" (globref_name r)
  | Axiom (TypeInType r, _) -> entry "type_in_type" (globref_name r)
  | Axiom (UIP m, _) -> entry "uip" (mind_name m)
  | Opaque _ | Transparent _ -> None

let assumptions h (set : Constr.types Printer.ContextObjectMap.t) =
  J.List
    (List.filter_map (fun (obj, ty) -> assumption h obj ty) (Printer.ContextObjectMap.bindings set))

(* Coq's own Print Assumptions walk of a constant (opaque and transparent not listed) *)
let coq_assumptions cst =
  let gr = GlobRef.ConstRef cst in
  let st = Conv_oracle.get_transp_state (Environ.oracle (Global.env ())) in
  Assumptions.assumptions accessor st [ gr ]

(* ---- the universe graph --------------------------------------------------------------- *)

let entails_le l r =
  UGraph.check_leq (Global.universes ()) (Univ.Universe.make l) (Univ.Universe.make r)

let entails_lt l r = UGraph.check_constraint (Global.universes ()) (l, Univ.UnivConstraint.Lt, r)

(* the levels that are not [is_local] (nor Set) and that the graph relates directly to a
   level that is: where a library's constraints reach into the rest of the graph *)
let adjacent_levels is_local =
  let cs, _ = UGraph.constraints_of_universes (Global.universes ()) in
  let outside l = not (is_local l || Univ.Level.is_set l) in
  Univ.UnivConstraints.fold
    (fun (l, _, r) acc ->
      if is_local l && outside r then Univ.Level.Set.add r acc
      else if is_local r && outside l then Univ.Level.Set.add l acc
      else acc)
    cs Univ.Level.Set.empty
  |> Univ.Level.Set.elements

let version = Coq_config.version
