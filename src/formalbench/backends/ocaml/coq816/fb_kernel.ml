(* formalbench: the kernel objects of Coq 8.16 as JSON (format: kdump-format.md, v1).

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
  | MPdot (mp, l) -> modpath_name mp ^ "." ^ Label.to_string l

let kn_name kn =
  let mp, l = KerName.repr kn in
  modpath_name mp ^ "." ^ Label.to_string l

let const_name c = kn_name (Constant.canonical c)
let user_const_name c = kn_name (Constant.user c)
let mind_name m = kn_name (MutInd.canonical m)
let level_name l = Univ.Level.to_string l

let level h l = h.level l; J.Str (level_name l)
let instance h u = J.array (level h) (Univ.Instance.to_array u)

let universe h u =
  J.list (fun (l, k) -> J.List [ level h l; J.Int k ]) (Univ.Universe.repr u)

let sort h (s : Sorts.t) =
  match s with
  | Sorts.SProp -> J.Str "SProp"
  | Sorts.Prop -> J.Str "Prop"
  | Sorts.Set -> J.Str "Set"
  | Sorts.Type u -> J.List [ J.Str "Type"; universe h u ]

let relevance = function Sorts.Relevant -> J.Str "R" | Sorts.Irrelevant -> J.Str "I"
let relevance_word = function Sorts.Relevant -> J.Str "Relevant" | Sorts.Irrelevant -> J.Str "Irrelevant"

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
  | Constr.Case (ci, u, pms, (nas, p), iv, scrut, brs) ->
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
        relevance ci.Constr.ci_relevance ]
  | Constr.Fix ((idx, i), (_, tys, bds)) ->
    List [ Str "Fix"; J.array (fun k -> Int k) idx; Int i; J.array t tys; J.array t bds ]
  | Constr.CoFix (i, (_, tys, bds)) -> List [ Str "CoFix"; Int i; J.array t tys; J.array t bds ]
  | Constr.Proj (p, c) ->
    let cst = Projection.constant p in
    h.const cst;
    h.mind (Projection.mind p);
    List [ Str "Proj"; Str (const_name cst); Bool (Projection.unfolded p); t c ]
  | Constr.Int n -> List [ Str "Int"; Str (Uint63.to_string n) ]
  | Constr.Float f -> List [ Str "Float"; Str (Float64.to_hex_string f) ]
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
  | Univ.Lt -> "<"
  | Univ.Le -> "<="
  | Univ.Eq -> "="

let constraints h cs =
  J.list
    (fun (l, k, r) -> J.List [ level h l; J.Str (constraint_word k); level h r ])
    (Univ.Constraints.elements cs)

let univs h (u : Declarations.universes) =
  match u with
  | Declarations.Monomorphic -> J.Obj [ ("polymorphic", J.Bool false) ]
  | Declarations.Polymorphic ctx ->
    let uctx = Univ.AbstractContext.repr ctx in
    J.Obj
      [ ("polymorphic", J.Bool true);
        ("size", J.Int (Univ.AbstractContext.size ctx));
        ("constraints", constraints h (Univ.UContext.constraints uctx)) ]

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
      ("cumulative_sprop", J.Bool f.cumulative_sprop) ]

(* what a flag set weakens with respect to Coq's defaults (each a word of the format) *)
let unsafe_words (f : Declarations.typing_flags) =
  let open Declarations in
  List.filter_map
    (fun (weak, word) -> if weak then Some word else None)
    [ (not f.check_guarded, "guard");
      (not f.check_positive, "positivity");
      (not f.check_universes, "universes");
      (f.allow_uip, "uip");
      (f.impredicative_set, "impredicative_set");
      (f.cumulative_sprop, "cumulative_sprop") ]

(* ---- constants ------------------------------------------------------------------------ *)

let constant_kind (cb : Declarations.constant_body) =
  match cb.Declarations.const_body with
  | Declarations.Undef _ -> "undef"
  | Declarations.Def _ -> "def"
  | Declarations.OpaqueDef _ -> "opaque"
  | Declarations.Primitive _ -> "primitive"

let constant_type (cb : Declarations.constant_body) = cb.Declarations.const_type
let constant_flags (cb : Declarations.constant_body) = cb.Declarations.const_typing_flags

(* the body the closure follows and records: a transparent body, a primitive's name *)
let constant_body h (cb : Declarations.constant_body) =
  match cb.Declarations.const_body with
  | Declarations.Def c -> term h c
  | Declarations.Primitive p -> J.Str (CPrimitives.to_string p)
  | Declarations.Undef _ | Declarations.OpaqueDef _ -> J.Null

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
  | Sorts.InSProp -> "SProp"
  | Sorts.InProp -> "Prop"
  | Sorts.InSet -> "Set"
  | Sorts.InType -> "Type"

let mind_record h mind (mib : Declarations.mutual_inductive_body) =
  match mib.Declarations.mind_record with
  | Declarations.NotRecord -> J.Null
  | Declarations.FakeRecord -> J.Str "fake"
  | Declarations.PrimRecord packets ->
    let mp = MutInd.modpath mind in
    let names =
      List.concat_map
        (fun (_, labels, _, _) ->
          List.map (fun l -> J.Str (const_name (Constant.make2 mp l))) (Array.to_list labels))
        (Array.to_list packets)
    in
    let types =
      List.concat_map (fun (_, _, _, tys) -> List.map (term h) (Array.to_list tys))
        (Array.to_list packets)
    in
    let rels =
      List.concat_map (fun (_, _, rs, _) -> List.map relevance_word (Array.to_list rs))
        (Array.to_list packets)
    in
    J.Obj [ ("projections", J.List names); ("types", J.List types); ("relevances", J.List rels) ]

let template h (mib : Declarations.mutual_inductive_body) =
  match mib.Declarations.mind_template with
  | None -> J.Null
  | Some tpl ->
    let levels, cs = tpl.Declarations.template_context in
    J.Obj
      [ ("param_levels", J.list (J.opt (level h)) tpl.Declarations.template_param_levels);
        ("levels", J.list (level h) (Univ.Level.Set.elements levels));
        ("constraints", constraints h cs) ]

let variance = function
  | Univ.Variance.Irrelevant -> J.Str "Irrelevant"
  | Univ.Variance.Covariant -> J.Str "Covariant"
  | Univ.Variance.Invariant -> J.Str "Invariant"

let packet h (oib : Declarations.one_inductive_body) =
  let open Declarations in
  let user_arity, sort_json =
    match oib.mind_arity with
    | RegularArity a -> (term h a.mind_user_arity, sort h a.mind_sort)
    | TemplateArity t -> (J.Null, sort h t.template_level)
  in
  J.Obj
    [ ("name", J.Str (Id.to_string oib.mind_typename));
      ("arity_ctxt", context h oib.mind_arity_ctxt);
      ("user_arity", user_arity);
      ("sort", sort_json);
      ("consnames", J.array (fun id -> J.Str (Id.to_string id)) oib.mind_consnames);
      ("user_lc", J.array (term h) oib.mind_user_lc);
      ("nrealargs", J.Int oib.mind_nrealargs);
      ("nrealdecls", J.Int oib.mind_nrealdecls);
      ("kelim", J.Str (family oib.mind_kelim));
      ("relevance", relevance_word oib.mind_relevance) ]

let mind h mind (mib : Declarations.mutual_inductive_body) =
  let open Declarations in
  J.Obj
    [ ("finite", J.Str (finite mib.mind_finite));
      ("ntypes", J.Int mib.mind_ntypes);
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
let mind_ntypes (mib : Declarations.mutual_inductive_body) = mib.Declarations.mind_ntypes

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
  Assumptions.assumptions st gr (Constr.mkConst cst)

(* ---- the universe graph --------------------------------------------------------------- *)

let entails_le l r =
  UGraph.check_leq (Global.universes ()) (Univ.Universe.make l) (Univ.Universe.make r)

let entails_lt l r = UGraph.check_constraint (Global.universes ()) (l, Univ.Lt, r)

(* the levels that are not [is_local] (nor Set) and that the graph relates directly to a
   level that is: where a library's constraints reach into the rest of the graph *)
let adjacent_levels is_local =
  let cs, _ = UGraph.constraints_of_universes (Global.universes ()) in
  let outside l = not (is_local l || Univ.Level.is_set l) in
  Univ.Constraints.fold
    (fun (l, _, r) acc ->
      if is_local l && outside r then Univ.Level.Set.add r acc
      else if is_local r && outside l then Univ.Level.Set.add l acc
      else acc)
    cs Univ.Level.Set.empty
  |> Univ.Level.Set.elements

let version = Coq_config.version
