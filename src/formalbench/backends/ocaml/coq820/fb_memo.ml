(* formalbench: `Print Assumptions` that remembers the libraries it has already walked
   (Coq 8.20 API: 8.16's walk and module records, with 8.20's terms — primitive strings,
   relevances on Proj and on Case's return clause —, symbols, and squashing in uses_uip).

   `assumptions ?local root` is Print Assumptions' answer for [root]: the same objects are
   reached, judged by the same rules, into the same Printer.context_object constructors.
   Objects of libraries frozen by `freeze` are walked once per process; [local] (a table
   the caller may share between calls made on an unchanged environment, as the dump of a
   whole library does) holds the walks of everything else. *)

open Names
open Declarations

(* ---- constants of a module sealed by its signature: found in the implementation ------ *)

let impl_fields = ref MPmap.empty

let rec module_in_impl mp =
  match mp with
  | MPfile _ | MPbound _ -> Global.lookup_module mp
  | MPdot (parent, lab) ->
    if ModPath.equal parent (Global.current_modpath ()) then Global.lookup_module mp
    else
      let rec find = function
        | [] -> raise Not_found
        | (l, SFBmodule mb) :: _ when Label.equal l lab -> mb
        | _ :: rest -> find rest
      in
      find (fields_in_impl parent)

and fields_in_impl mp =
  match MPmap.find_opt mp !impl_fields with
  | Some fields -> fields
  | None ->
    let mb = module_in_impl mp in
    let fields, inner, subst = fields_of_body Mod_subst.empty_subst mb [] in
    let subst =
      if ModPath.equal inner mp then subst else Mod_subst.add_mp inner mp mb.mod_delta subst
    in
    let fields = Modops.subst_structure subst fields in
    impl_fields := MPmap.add mp fields !impl_fields;
    fields

and fields_of_body subst mb args =
  match mb.mod_expr with
  | Algebraic expr ->
    through_functor fields_of_expr subst mb.mod_mp args
      (Modops.annotate_module_expression expr mb.mod_type)
  | Struct sign ->
    through_functor plain subst mb.mod_mp args (Modops.annotate_struct_body sign mb.mod_type)
  | Abstract | FullStruct -> through_functor plain subst mb.mod_mp args mb.mod_type

and plain subst mp args fields =
  assert (args = []);
  (fields, mp, subst)

and through_functor : 'a 'b. (Mod_subst.substitution -> ModPath.t -> ModPath.t list -> 'a -> 'r)
    -> Mod_subst.substitution -> ModPath.t -> ModPath.t list -> ('b, 'a) functorize -> 'r =
  fun k subst mp args -> function
  | NoFunctor body -> k subst mp args body
  | MoreFunctor (mbid, _, rest) ->
    (match args with
     | [] -> assert false
     | arg :: args ->
       let subst =
         Mod_subst.join (Mod_subst.map_mbid mbid arg Mod_subst.empty_delta_resolver) subst
       in
       through_functor k subst mp args rest)

and fields_of_expr subst mp args = function
  | MEident m -> fields_of_body subst (module_in_impl (Mod_subst.subst_mp subst m)) args
  | MEapply (f, arg) -> fields_of_expr subst mp (arg :: args) f
  | MEwith _ -> assert false

let constant_in_impl cst fallback =
  try
    let mp, lab = KerName.repr (Constant.canonical cst) in
    let rec find = function
      | [] -> raise Not_found
      | (l, SFBconst cb) :: _ when Label.equal l lab -> cb
      | _ :: rest -> find rest
    in
    find (fields_in_impl mp)
  with Not_found -> (
    match fallback with
    | Some cb -> cb
    | None -> CErrors.user_err Pp.(str "Fb_Print_Assumptions: unknown constant " ++ Constant.print cst))

let lookup_constant cst =
  let env = Global.env () in
  if not (Environ.mem_constant cst env) then constant_in_impl cst None
  else
    let cb = Environ.lookup_constant cst env in
    if Declareops.constant_has_body cb then cb else constant_in_impl cst (Some cb)

let lookup_mind mind =
  let env = Global.env () in
  if Environ.mem_mind mind env then Environ.lookup_mind mind env
  else
    let mp, lab = KerName.repr (MutInd.canonical mind) in
    let rec find = function
      | [] -> CErrors.user_err Pp.(str "Fb_Print_Assumptions: unknown inductive " ++ MutInd.print mind)
      | (l, SFBmind mib) :: _ when Label.equal l lab -> mib
      | _ :: rest -> find rest
    in
    find (fields_in_impl mp)

let constant_body kn =
  let cb = lookup_constant kn in
  match cb.const_body with
  | Undef _ | Primitive _ | Symbol _ -> None
  | Def c -> Some c
  | OpaqueDef o -> (
    match Global.force_proof Fb_kernel.accessor o with
    | c, _ -> Some c
    | exception _ -> None)

let label_of = function
  | GlobRef.ConstRef kn -> Constant.label kn
  | GlobRef.IndRef (kn, _) | GlobRef.ConstructRef ((kn, _), _) -> MutInd.label kn
  | GlobRef.VarRef id -> Label.of_id id

(* ---- what one declaration refers to (its direct references, not their closure) -------- *)

(* What a declaration refers to, in the order Print Assumptions meets it (depth first,
   binders in order), so that replaying these lists visits objects, and records the uses of
   axioms, in exactly its order. *)
type event =
  | Ref of GlobRef.t  (* an object named in the body (or in an inductive's types) *)
  | Inhabits of GlobRef.t * (Label.t * Constr.rel_context * Constr.types)
      (* an empty, non-dependent match on an axiom: Print Assumptions reports the axiom
         with the type it was used to prove, and looks no further into that match *)

type uses = {
  events : event list;
  has_body : bool;  (* false: an assumption (axiom, parameter, admitted, missing body) *)
}

let subterms_with_binders g f n acc c =
  let open Constr in
  let open Context.Rel.Declaration in
  match kind c with
  | Rel _ | Meta _ | Var _ | Sort _ | Const _ | Ind _ | Construct _ | Int _ | Float _ | String _ -> acc
  | Cast (c, _, t) -> f n (f n acc c) t
  | Prod (na, t, c) | Lambda (na, t, c) -> f (g (LocalAssum (na, t)) n) (f n acc t) c
  | LetIn (na, b, t, c) -> f (g (LocalDef (na, b, t)) n) (f n (f n acc b) t) c
  | App (c, l) -> Array.fold_left (f n) (f n acc c) l
  | Proj (_, _, c) -> f n acc c
  | Evar _ -> acc
  | Case (ci, u, pms, p, iv, c, bl) ->
    let mib = lookup_mind (fst ci.ci_ind) in
    let _, (p, _), iv, c, bl = Inductive.expand_case_specif mib (ci, u, pms, p, iv, c, bl) in
    Array.fold_left (f n) (f n (fold_invert (f n) (f n acc p) iv) c) bl
  | Fix (_, (lna, tl, bl)) | CoFix (_, (lna, tl, bl)) ->
    let n' = CArray.fold_left2_i (fun i c na t -> g (LocalAssum (na, Vars.lift i t)) c) n lna tl in
    CArray.fold_left2 (fun acc t b -> f n' (f n acc t) b) acc tl bl
  | Array (_, t, def, ty) -> f n (f n (Array.fold_left (f n) acc t) def) ty

let rec scan_term label ctx acc t =
  let open Constr in
  match kind t with
  | Var id -> Ref (GlobRef.VarRef id) :: acc
  | Const (kn, _) -> Ref (GlobRef.ConstRef kn) :: acc
  | Ind (ind, _) -> Ref (GlobRef.IndRef ind) :: acc
  | Construct (cstr, _) -> Ref (GlobRef.ConstructRef cstr) :: acc
  | Case (_, _, _, (([| _ |], oty), _), _, c, [||]) when Vars.noccurn 1 oty -> (
    match kind c with
    | Const (kn, _) when not (Declareops.constant_has_body (lookup_constant kn)) ->
      Inhabits (GlobRef.ConstRef kn, (label, ctx, Vars.subst1 mkProp oty)) :: acc
    | _ -> subterms_with_binders Context.Rel.add (scan_term label) ctx acc t)
  | _ -> subterms_with_binders Context.Rel.add (scan_term label) ctx acc t

let scan_context label ctx acc decls =
  snd
    (Context.Rel.fold_outside
       (fun decl (ctx, acc) ->
         let acc =
           match decl with
           | Context.Rel.Declaration.LocalDef (_, c, t) ->
             scan_term label ctx (scan_term label ctx acc t) c
           | Context.Rel.Declaration.LocalAssum (_, t) -> scan_term label ctx acc t
         in
         (Context.Rel.add decl ctx, acc))
       decls ~init:(ctx, acc))

(* [events] as scanned (last met first) put in meeting order; a reference met again is
   dropped (the walk would skip it anyway) *)
let in_order events =
  let keep (seen, out) = function
    | Ref r when GlobRef.Set_env.mem r seen -> (seen, out)
    | Ref r as e -> (GlobRef.Set_env.add r seen, e :: out)
    | e -> (seen, e :: out)
  in
  List.rev (snd (List.fold_left keep (GlobRef.Set_env.empty, []) (List.rev events)))

let scan_body obj body =
  match body with
  | None -> { events = []; has_body = false }
  | Some b -> { events = in_order (scan_term (label_of obj) Context.Rel.empty [] b); has_body = true }

(* an inductive block: its parameters, arities and constructor types (read under the
   parameters, as Print Assumptions reads them), shared by all of its inductives and
   constructors; the block's first inductive is not its own dependency *)
let scan_inductive mind =
  let mib = lookup_mind mind in
  let label = MutInd.label mind in
  let params = mib.mind_params_ctxt in
  let nparams = List.length params in
  let acc = scan_context label Context.Rel.empty [] params in
  let acc =
    Array.fold_left
      (fun acc oib ->
        let arity = List.rev (CList.skipn nparams (List.rev oib.mind_arity_ctxt)) in
        let acc = scan_context label params acc arity in
        Array.fold_left
          (fun acc typ ->
            let _, typ = Term.decompose_prod_n_decls nparams typ in
            scan_term label params acc typ)
          acc oib.mind_user_lc)
      acc mib.mind_packets
  in
  let first = GlobRef.IndRef (mind, 0) in
  let events = List.filter (function Ref r -> not (GlobRef.CanOrd.equal r first) | _ -> true) acc in
  { events = in_order events; has_body = true }

module Libs = DPmap

(* ---- the objects of frozen libraries, remembered across calls -------------------------- *)

(* What is remembered must be the object asked about now. A library is known by its name,
   and a name can be loaded with other content: after `Reset`, a check `Require`s its own
   `Candidate`, and every candidate has that name. So a library is frozen with the module
   body it had then, and trusted only while that very body (physically: a library loaded
   again is read anew from its file) is the one loaded; a library unloaded or loaded again
   leaves the frozen set and the remembered walks are dropped (a walk of one library names
   objects of the libraries below it). Objects of libraries not frozen are never taken from
   [remembered]. *)
let frozen : module_body Libs.t ref = ref Libs.empty
let remembered : uses GlobRef.Map_env.t ref = ref GlobRef.Map_env.empty

let loaded_body dp =
  if Library.library_is_loaded dp then
    try Some (Global.lookup_module (MPfile dp)) with Not_found -> None
  else None

let still_loaded dp body = match loaded_body dp with Some b -> b == body | None -> false

(* the frozen set as it holds in the environment now *)
let validate () =
  if not (Libs.for_all still_loaded !frozen) then begin
    frozen := Libs.filter still_loaded !frozen;
    remembered := GlobRef.Map_env.empty
  end

let rec library_of = function
  | MPfile dp -> Some dp
  | MPbound _ -> None
  | MPdot (mp, _) -> library_of mp

let is_frozen obj =
  let library =
    match obj with
    | GlobRef.ConstRef kn -> library_of (Constant.modpath kn)
    | GlobRef.IndRef (mind, _) | GlobRef.ConstructRef ((mind, _), _) ->
      library_of (MutInd.modpath mind)
    | GlobRef.VarRef _ -> None
  in
  match library with Some dp -> Libs.mem dp !frozen | None -> false

let library_named name =
  DirPath.make (List.rev_map Id.of_string (String.split_on_char '.' name))

(* Freeze the libraries named in [only] (each must be loaded), or every library loaded now
   when [only] is empty. The session names the libraries it preloaded itself: never one of a
   check's, which are loaded above its mark and replaced at the next check. *)
let freeze only =
  validate ();
  let chosen =
    match only with
    | [] -> Library.loaded_libraries ()
    | names ->
      List.map
        (fun name ->
          let dp = library_named name in
          if not (Library.library_is_loaded dp) then
            CErrors.user_err Pp.(str "Fb_Freeze_Assumptions: no loaded library " ++ str name);
          dp)
        names
  in
  List.iter
    (fun dp ->
      match loaded_body dp with
      | Some body -> frozen := Libs.add dp body !frozen
      | None -> ())
    chosen

(* what the plugin remembers, for tests: the frozen libraries and the remembered objects *)
let status () =
  validate ();
  Pp.(
    str "Fb_memo: " ++ int (GlobRef.Map_env.cardinal !remembered) ++ str " remembered;"
    ++ prlist (fun (dp, _) -> str " " ++ DirPath.print dp) (Libs.bindings !frozen))

let compute_uses obj =
  match obj with
  | GlobRef.ConstRef kn -> scan_body obj (constant_body kn)
  | GlobRef.VarRef id ->
    scan_body obj (Context.Named.Declaration.get_value (Global.lookup_named id))
  | GlobRef.IndRef (mind, _) | GlobRef.ConstructRef ((mind, _), _) -> scan_inductive mind

let uses_of local obj =
  let key =
    match obj with
    | GlobRef.IndRef (mind, _) | GlobRef.ConstructRef ((mind, _), _) ->
      GlobRef.IndRef (mind, 0)
    | _ -> obj
  in
  let table = if is_frozen key then remembered else local in
  match GlobRef.Map_env.find_opt key !table with
  | Some u -> u
  | None ->
    let u = compute_uses obj in
    table := GlobRef.Map_env.add key u !table;
    u

(* ---- the assumptions: every object reached, judged as Print Assumptions judges it ------ *)

let uses_uip mib =
  Array.exists
    (fun mip ->
      Option.is_empty mip.mind_squashed
      && mip.mind_relevance == Sorts.Irrelevant
      && Array.length mip.mind_nf_lc = 1
      && List.length (fst mip.mind_nf_lc.(0)) = List.length mib.mind_params_ctxt)
    mib.mind_packets

let block_of = function
  | GlobRef.IndRef (mind, _) | GlobRef.ConstructRef ((mind, _), _) ->
    let mib = lookup_mind mind in
    List.concat
      (List.mapi
         (fun n oib ->
           GlobRef.IndRef (mind, n)
           :: List.mapi (fun k _ -> GlobRef.ConstructRef ((mind, n), k + 1))
                (Array.to_list oib.mind_consnames))
         (Array.to_list mib.mind_packets))
  | obj -> [ obj ]

let new_local () : uses GlobRef.Map_env.t ref = ref GlobRef.Map_env.empty

let assumptions_of_roots ?(local = new_local ()) roots =
  (* the implementations read by an earlier command may be of another library now *)
  let () = impl_fields := MPmap.empty in
  validate ();
  let seen = ref GlobRef.Map_env.empty in
  let ax2ty = ref GlobRef.Map_env.empty in
  (* Print Assumptions' walk, depth first; a whole inductive block is reached at once *)
  let rec visit obj =
    if not (GlobRef.Map_env.mem obj !seen) then begin
      let u = uses_of local obj in
      List.iter (fun o -> seen := GlobRef.Map_env.add o u !seen) (block_of obj);
      List.iter
        (function
          | Ref r -> visit r
          | Inhabits (ax, entry) ->
            let l = Option.default [] (GlobRef.Map_env.find_opt ax !ax2ty) in
            ax2ty := GlobRef.Map_env.add ax (entry :: l) !ax2ty;
            visit ax)
        u.events
    end
  in
  List.iter visit roots;
  let ax2ty = !ax2ty in
  let used obj = Option.default [] (GlobRef.Map_env.find_opt obj ax2ty) in
  let open Printer in
  let add key ty acc = ContextObjectMap.add key ty acc in
  let judge obj u acc =
    match obj with
    | GlobRef.VarRef id ->
      let decl = Global.lookup_named id in
      if Context.Named.Declaration.is_local_assum decl then
        add (Variable id) (Context.Named.Declaration.get_type decl) acc
      else acc
    | GlobRef.ConstRef kn ->
      let cb = lookup_constant kn in
      let acc =
        if cb.const_typing_flags.check_guarded then acc
        else add (Axiom (Guarded obj, used obj)) Constr.mkProp acc
      in
      let acc =
        if cb.const_typing_flags.check_universes then acc
        else add (Axiom (TypeInType obj, used obj)) Constr.mkProp acc
      in
      if u.has_body then acc else add (Axiom (Constant kn, used obj)) cb.const_type acc
    | GlobRef.IndRef (m, _) | GlobRef.ConstructRef ((m, _), _) ->
      let mib = lookup_mind m in
      let flags = mib.mind_typing_flags in
      let acc =
        if flags.check_positive then acc else add (Axiom (Positive m, used obj)) Constr.mkProp acc
      in
      let acc =
        if flags.check_guarded then acc else add (Axiom (Guarded obj, used obj)) Constr.mkProp acc
      in
      let acc =
        if flags.check_universes then acc
        else add (Axiom (TypeInType obj, used obj)) Constr.mkProp acc
      in
      if uses_uip mib then add (Axiom (UIP m, used obj)) Constr.mkProp acc else acc
  in
  GlobRef.Map_env.fold judge !seen ContextObjectMap.empty

(* Print Assumptions of one object *)
let assumptions ?local root = assumptions_of_roots ?local [ root ]


let frozen_any () = not (Libs.is_empty !frozen)

(* an opaque body where it can be read (the library dump lists what it mentions) *)
let opaque_body (cb : constant_body) =
  match cb.const_body with
  | OpaqueDef o -> (
    match Global.force_proof Fb_kernel.accessor o with
    | c, _ -> Some c
    | exception _ -> None)
  | _ -> None

(* ---- the library's structure, implementations resolved (for the library dump) ---------- *)

type where = Module | Functor | Module_type | Functor_parameter

type item =
  | IConst of where * KerName.t * constant_body
  | IMind of where * KerName.t * mutual_inductive_body
  | IRules of where * KerName.t  (* a block of rewrite rules *)
  | ICopy of where * ModPath.t
      (* a module or functor defined by an algebraic expression (`Module M := F X.`), met
         before its objects: they are copies of another structure's (fb_dump lists no
         postulate of such a copy inside a functor or module type: its origin is listed) *)
  | IBound of where * ModPath.t * int * MBId.t
      (* the [int]-th parameter (from 1) of the functor or module type at [ModPath.t], met
         before the objects of its signature; [where]: where that functor or module type is *)

let rec strip visit_param i = function
  | NoFunctor s -> s
  | MoreFunctor (mbid, (mtb : module_type_body), rest) ->
    visit_param i mbid mtb;
    strip visit_param (i + 1) rest

(* Every object of the library, once: modules of the environment through their
   implementation (as Print Assumptions sees them), functors through their bodies and
   parameters, module types through their signatures. *)
let walk_library lib (f : item -> unit) =
  impl_fields := MPmap.empty;  (* read afresh: an earlier command's may be of another library *)
  let rec fields where mp structure =
    List.iter
      (fun (lab, field) ->
        match field with
        | SFBconst cb -> f (IConst (where, KerName.make mp lab, cb))
        | SFBmind mib -> f (IMind (where, KerName.make mp lab, mib))
        | SFBrules _ -> f (IRules (where, KerName.make mp lab))
        | SFBmodule mb -> sub_module where (MPdot (mp, lab)) mb
        | SFBmodtype mtb -> signature Module_type (MPdot (mp, lab)) mtb.mod_type)
      structure
  and params where mp i mbid (mtb : module_type_body) =
    f (IBound (where, mp, i, mbid));
    signature Functor_parameter (MPbound mbid) mtb.mod_type
  and signature where mp sg = fields where mp (strip (params where mp) 1 sg)
  and sub_module where mp (mb : module_body) =
    (match mb.mod_expr with Algebraic _ -> f (ICopy (where, mp)) | _ -> ());
    match (where, mb.mod_type) with
    | Module, NoFunctor _ -> fields Module mp (fields_in_impl mp)
    | _, MoreFunctor _ -> (
      match mb.mod_expr with
      | Struct sg -> signature Functor mp (Modops.annotate_struct_body sg mb.mod_type)
      | Algebraic _ | Abstract | FullStruct -> signature Functor mp mb.mod_type)
    | _, NoFunctor _ -> (
      let inner = if where = Module_type || where = Functor_parameter then where else Functor in
      match mb.mod_expr with
      | Struct sg -> signature inner mp (Modops.annotate_struct_body sg mb.mod_type)
      | _ -> signature inner mp mb.mod_type)
  in
  fields Module (MPfile lib) (fields_in_impl (MPfile lib))
