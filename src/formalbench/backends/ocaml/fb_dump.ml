(* formalbench: the kernel dump of a loaded library (format: kdump-format.md, v1).

   Two dumps, each ONE JSON object printed on one line between two marker lines carrying a
   nonce the caller chose (`FBDUMP-BEGIN <nonce>` / `FBDUMP-END <nonce>`):

   - `targets`: for each asked name, the constant it names (kind, type, universes, its
     assumptions by the kernel's constructors), the closure of the library-local constants
     and inductives its type reaches (transitively through transparent bodies and every
     field of an inductive), the library's postulates, the objects whose typing flags are
     not Coq's defaults, and the universe graph restricted to the library's levels seen; a
     name that is a field of a functor body or a module type (no constant of the
     environment) is found in an index of the library's structure and dumped the same way,
     with the parameters that bind it and their whole signatures (see "objects outside the
     environment" below);
   - `library`: every object of the library, in modules, functor bodies, functor
     parameters and module types alike: kind, type, typing flags, and where it is in the
     environment its assumptions (objects of functor bodies and module types are not in
     the environment: for those, the names their type and body mention).

   Nothing here reads printed text: every term is walked by Fb_kernel, every assumption is
   a Printer.context_object. This file uses only the version-neutral parts of the API
   (names, universe levels) and Fb_kernel/Fb_memo for the rest, module structures included
   (Fb_memo.walk_library: 9.x reads module bodies through Mod_declarations), so that it
   builds unchanged for Coq 8.16 and Rocq 9.2. *)

open Names
open Declarations
module J = Fb_json
module K = Fb_kernel
module SSet = Set.Make (String)

let rec root_of = function
  | MPfile dp -> Some dp
  | MPbound _ -> None
  | MPdot (mp, _) -> root_of mp

let in_library lib mp = match root_of mp with Some d -> DirPath.equal d lib | None -> false

let print_framed nonce json =
  Format.pp_print_flush Format.std_formatter ();
  Format.pp_print_flush Format.err_formatter ();
  let text = J.to_string json in
  print_string ("\nFBDUMP-BEGIN " ^ nonce ^ "\n" ^ text ^ "\nFBDUMP-END " ^ nonce ^ "\n");
  flush stdout

let header kind lib =
  [ ("format", J.Int 1);
    ("dump", J.Str kind);
    ("coq", J.Str K.version);
    ("library", J.Str (DirPath.to_string lib));
    ("flags", K.flags (Global.typing_flags ())) ]

(* ---- the library's structure (Fb_memo.walk_library: module bodies are read through the
   version's API) ------------------------------------------------------------------------ *)

type where = Fb_memo.where = Module | Functor | Module_type | Functor_parameter

let where_word = function
  | Module -> "module"
  | Functor -> "functor"
  | Module_type -> "module_type"
  | Functor_parameter -> "functor_parameter"

let walk_library = Fb_memo.walk_library

let const_of kn = try Global.constant_of_delta_kn kn with e when CErrors.noncritical e -> Constant.make1 kn
let mind_of kn = try Global.mind_of_delta_kn kn with e when CErrors.noncritical e -> MutInd.make1 kn

(* ---- objects outside the environment: functor bodies, module types, parameters ------------ *)

(* A field of a functor body or of a module type is no constant of the environment (the
   functor is a function on modules until applied), so it is found here, in an index of the
   library's structure built by one walk: every such object by its name, the parameters of
   every functor and module type in order, and the objects of each parameter's signature. A
   parameter gets a canonical, unique spelling, `<path of its functor>.(<position>:<name>)`
   (`Candidate.F.(1:X)`): Coq prints an MBId as `Candidate.X`, so two functors' `X` would
   print alike; the path and the position make it unique and the same for the same source on
   both sides of a comparison, and `(` cannot occur in a Coq name. *)

type local_obj =
  | LConst of where * KerName.t * constant_body
  | LMind of where * KerName.t * mutual_inductive_body

type index = {
  objects : (string, local_obj) Hashtbl.t;  (* outside the environment, by name *)
  ambiguous : (string, unit) Hashtbl.t;  (* names met twice: never resolved *)
  params : (string, string list) Hashtbl.t;  (* functor or module type -> its parameters *)
  fields : (string, string list) Hashtbl.t;  (* parameter -> its signature's objects *)
  mutable bound : (MBId.t * string) list;
}

let rec root_bound = function
  | MPbound id -> Some id
  | MPdot (mp, _) -> root_bound mp
  | MPfile _ -> None

let bound_of ix id = List.find_map (fun (b, s) -> if MBId.equal b id then Some s else None) ix.bound

let push tbl key v = Hashtbl.replace tbl key (v :: Option.default [] (Hashtbl.find_opt tbl key))

(* the library's items (one walk, shared by the index, the postulates and the unsafe list) *)
let items_of lib =
  let items = ref [] in
  walk_library lib (fun it -> items := it :: !items);
  List.rev !items

let index_of items =
  let ix =
    { objects = Hashtbl.create 97; ambiguous = Hashtbl.create 7; params = Hashtbl.create 17;
      fields = Hashtbl.create 17; bound = [] }
  in
  K.bound_name := bound_of ix;
  let add where kn obj =
    let name = K.kn_name kn in
    if Hashtbl.mem ix.objects name then Hashtbl.replace ix.ambiguous name ()
    else Hashtbl.add ix.objects name obj;
    match (where, root_bound (KerName.modpath kn)) with
    | Functor_parameter, Some id -> (
      match bound_of ix id with Some b -> push ix.fields b name | None -> ())
    | _ -> ()
  in
  List.iter
    (function
      | Fb_memo.IBound (_, mp, i, mbid) ->
        let _, id, _ = MBId.repr mbid in
        let path = K.modpath_name mp in
        let name = Printf.sprintf "%s.(%d:%s)" path i (Id.to_string id) in
        ix.bound <- (mbid, name) :: ix.bound;
        push ix.params path name
      | Fb_memo.IConst (where, kn, cb) when where <> Module -> add where kn (LConst (where, kn, cb))
      | Fb_memo.IMind (where, kn, mib) when where <> Module -> add where kn (LMind (where, kn, mib))
      | _ -> ())
    items;
  ix

let find_local ix name =
  if Hashtbl.mem ix.ambiguous name then None else Hashtbl.find_opt ix.objects name

(* the object of the environment a reference names (by its user name, else its canonical
   name: a field of a module aliased inside a functor body); None: not in the environment
   (Global.lookup_* raise an anomaly rather than Not_found there) *)
let env_const c =
  let env = Global.env () in
  if Environ.mem_constant c env then Some c
  else
    let c' = Constant.make1 (Constant.canonical c) in
    if Environ.mem_constant c' env then Some c' else None

let env_mind m =
  let env = Global.env () in
  if Environ.mem_mind m env then Some m
  else
    let m' = MutInd.make1 (MutInd.canonical m) in
    if Environ.mem_mind m' env then Some m' else None

let in_env_const c = env_const c <> None
let in_env_mind m = env_mind m <> None

(* ---- the `targets` dump ---------------------------------------------------------------- *)

type closure = {
  lib : DirPath.t;
  prefix : string;
  todo_c : Constant.t Queue.t;
  todo_m : MutInd.t Queue.t;
  todo_l : string Queue.t;  (* objects outside the environment (index), by name *)
  ix : index;
  mutable seen : SSet.t;  (* canonical names queued *)
  mutable levels : Univ.Level.t list;  (* library-local levels, first seen first *)
  mutable level_names : SSet.t;
}

let hooks st =
  let local mp = in_library st.lib mp in
  {
    K.const =
      (fun c ->
        let name = K.const_name c in
        let mp = KerName.modpath (Constant.canonical c) in
        if (local mp || root_bound mp <> None) && not (SSet.mem name st.seen) then begin
          st.seen <- SSet.add name st.seen;
          if (not (in_env_const c)) && find_local st.ix name <> None then Queue.add name st.todo_l
          else Queue.add c st.todo_c
        end);
    K.mind =
      (fun m ->
        let name = K.mind_name m in
        let mp = KerName.modpath (MutInd.canonical m) in
        if (local mp || root_bound mp <> None) && not (SSet.mem name st.seen) then begin
          st.seen <- SSet.add name st.seen;
          if (not (in_env_mind m)) && find_local st.ix name <> None then Queue.add name st.todo_l
          else Queue.add m st.todo_m
        end);
    K.level =
      (fun l ->
        let name = K.level_name l in
        let n = String.length st.prefix in
        if String.length name > n && String.sub name 0 n = st.prefix
           && not (SSet.mem name st.level_names)
        then begin
          st.level_names <- SSet.add name st.level_names;
          st.levels <- l :: st.levels
        end);
  }

(* How a target's assumptions are computed: [`Exact] by Coq's own Assumptions.assumptions
   (the walk of Print Assumptions, afresh for each target); [`Shared] by its memoizing twin
   (fb_memo.ml: the same walk and constructors, frozen libraries remembered across commands)
   with one table for all targets of the command, so that what two targets share is walked
   once (a file's 136 lemmas over mathcomp: once, not 136 times). *)
let assumptions_of mode local cst =
  match mode with
  | `Exact -> K.coq_assumptions cst
  | `Shared -> Fb_memo.assumptions ~local (GlobRef.ConstRef cst)


(* ---- a target inside a functor body or a module type ----------------------------------- *)

(* The assumptions of an object outside the environment, by Print Assumptions' rules over
   what it reaches: an object of a functor body or module type is followed through its body
   (an opaque proof too) in the index, and one with no body (`Parameter`, `Axiom`,
   `Admitted`, a `Declare Module` field) is an axiom of the library, by its full name; a field
   of a parameter's signature is a hypothesis of the functor, not listed (the comparison
   requires each parameter's whole signature to be the task's); an object of the environment
   is walked by Fb_memo (the memoized walk the environment's targets share). Failure names
   what cannot be followed. *)
let local_assumptions env_local ix h name cb =
  let seen = Hashtbl.create 31 in
  let env_roots = ref [] and axioms = ref [] in
  let walker = ref K.no_hooks in
  let unknown n = failwith ("`" ^ n ^ "` is neither in the environment nor in the library's structure") in
  let constant n cb =
    match K.constant_kind cb with
    | "def" -> ignore (K.constant_body !walker cb)
    | "opaque" -> (
      match Fb_memo.opaque_body cb with
      | Some b -> ignore (K.term !walker b)
      | None -> failwith ("the proof of `" ^ n ^ "` cannot be read"))
    | "primitive" -> ()
    | _ ->
      axioms := (n, cb) :: !axioms;
      ignore (K.term !walker (K.constant_type cb))
  in
  let const c =
    let n = K.const_name c in
    if not (Hashtbl.mem seen n) then begin
      Hashtbl.add seen n ();
      match env_const c with
      | Some c -> env_roots := GlobRef.ConstRef c :: !env_roots
      | None ->
        match find_local ix n with
        | Some (LConst (Functor_parameter, _, _)) -> ()
        | Some (LConst (_, _, cb)) -> constant n cb
        | _ -> unknown n
    end
  in
  let mind m =
    let n = K.mind_name m in
    if not (Hashtbl.mem seen n) then begin
      Hashtbl.add seen n ();
      match env_mind m with
      | Some m -> env_roots := GlobRef.IndRef (m, 0) :: !env_roots
      | None ->
        match find_local ix n with
        | Some (LMind (Functor_parameter, _, _)) -> ()
        | Some (LMind (_, kn, mib)) -> ignore (K.mind !walker (MutInd.make1 kn) mib)
        | _ -> unknown n
    end
  in
  walker := { K.const; K.mind; K.level = ignore };
  Hashtbl.add seen name ();
  constant name cb;
  let set = Fb_memo.assumptions_of_roots ~local:env_local (List.rev !env_roots) in
  let from_env = match K.assumptions h set with J.List l -> l | _ -> [] in
  let own =
    List.rev_map
      (fun (n, cb) ->
        J.Obj [ ("kind", J.Str "axiom"); ("name", J.Str n); ("type", K.term h (K.constant_type cb)) ])
      !axioms
  in
  J.List (from_env @ own)

let force st name =
  if not (SSet.mem name st.seen) then begin
    st.seen <- SSet.add name st.seen;
    Queue.add name st.todo_l
  end

(* the parameters that bind an object at [kn], outermost first (those of every functor or
   module type around it), each with every object of its signature, all put in the closure:
   the comparison wants each signature whole, so that a candidate can neither add a
   hypothesis field nor change one *)
let binders st kn =
  let rec prefixes mp acc = match mp with MPdot (p, _) -> prefixes p (mp :: acc) | _ -> mp :: acc in
  List.concat_map
    (fun mp ->
      List.rev (Option.default [] (Hashtbl.find_opt st.ix.params (K.modpath_name mp)))
      |> List.map (fun b ->
             let fields = List.rev (Option.default [] (Hashtbl.find_opt st.ix.fields b)) in
             List.iter (force st) fields;
             J.Obj [ ("name", J.Str b); ("fields", J.list J.str fields) ]))
    (prefixes (KerName.modpath kn) [])

let functor_target env_local st h name =
  let not_found why = J.Obj [ ("found", J.Bool false); ("why", J.Str why) ] in
  if Hashtbl.mem st.ix.ambiguous name then
    not_found "cannot be dumped: the name is met twice in the library's structure"
  else
    match find_local st.ix name with
    | Some (LConst (((Functor | Module_type) as where), kn, cb)) -> (
      let ty = K.term h (K.constant_type cb) in
      let univs = K.constant_univs h cb in
      let bound = binders st kn in
      match local_assumptions env_local st.ix h name cb with
      | exception Failure why -> not_found ("cannot be dumped: " ^ why)
      | exception e when CErrors.noncritical e ->
        not_found ("cannot be dumped: " ^ Printexc.to_string e)
      | assumptions ->
        J.Obj
          [ ("found", J.Bool true); ("user", J.Str name); ("canonical", J.Str name);
            ("kind", J.Str (K.constant_kind cb)); ("type", ty); ("univs", univs);
            ("assumptions", assumptions); ("section_vars", J.Null);
            ("where", J.Str (where_word where)); ("binders", J.List bound) ])
    | Some _ -> not_found "a field of a functor parameter's signature, or an inductive type"
    | None -> not_found "the name does not resolve to a global object"

let target mode local st h name =
  let not_found why = J.Obj [ ("found", J.Bool false); ("why", J.Str why) ] in
  match Nametab.locate (Libnames.qualid_of_string name) with
  | exception e when CErrors.noncritical e -> functor_target local st h name
  | GlobRef.ConstRef cst ->
    if not (in_library st.lib (Constant.modpath cst)) then
      not_found "the name resolves to a constant of another library"
    else (
      match Global.lookup_constant cst with
      | exception Not_found -> not_found "the constant is not in the environment"
      | exception e when CErrors.noncritical e ->
        not_found ("the constant cannot be read: " ^ Printexc.to_string e)
      | cb ->
        let ty = K.term h (K.constant_type cb) in
        let univs = K.constant_univs h cb in
        match K.assumptions h (assumptions_of mode local cst) with
        | exception e when CErrors.noncritical e ->
          not_found ("its assumptions cannot be computed: " ^ Printexc.to_string e)
        | assumptions ->
        J.Obj
          [ ("found", J.Bool true);
            ("user", J.Str (K.user_const_name cst));
            ("canonical", J.Str (K.const_name cst));
            ("kind", J.Str (K.constant_kind cb));
            ("type", ty);
            ("univs", univs);
            ("assumptions", assumptions);
            ("section_vars", J.Null) ])
  | GlobRef.IndRef _ -> not_found "an inductive type, not a constant"
  | GlobRef.ConstructRef _ -> not_found "a constructor, not a constant"
  | GlobRef.VarRef _ -> not_found "a section variable, not a constant"

let const_entry h cb =
  J.Obj
    [ ("kind", J.Str (K.constant_kind cb));
      ("type", K.term h (K.constant_type cb));
      ("body", K.constant_body h cb);
      ("univs", K.constant_univs h cb);
      ("flags", K.flags (K.constant_flags cb)) ]

let closure_entries st h =
  let consts = ref [] and minds = ref [] and undumpable = ref [] in
  let rec drain () =
    if not (Queue.is_empty st.todo_c) then begin
      let c = Queue.pop st.todo_c in
      (match Option.map Global.lookup_constant (env_const c) with
       | None | (exception Not_found) ->
         undumpable :=
           J.Obj [ ("name", J.Str (K.const_name c)); ("why", J.Str "not in the environment") ]
           :: !undumpable
       | Some cb -> consts := (K.const_name c, const_entry h cb) :: !consts);
      drain ()
    end
    else if not (Queue.is_empty st.todo_m) then begin
      let m = Queue.pop st.todo_m in
      (match Option.map Global.lookup_mind (env_mind m) with
       | None | (exception Not_found) ->
         undumpable :=
           J.Obj [ ("name", J.Str (K.mind_name m)); ("why", J.Str "not in the environment") ]
           :: !undumpable
       | Some mib -> minds := (K.mind_name m, K.mind h m mib) :: !minds);
      drain ()
    end
    else if not (Queue.is_empty st.todo_l) then begin
      let name = Queue.pop st.todo_l in
      (match find_local st.ix name with
       | Some (LConst (_, _, cb)) -> consts := (name, const_entry h cb) :: !consts
       | Some (LMind (_, kn, mib)) -> minds := (name, K.mind h (MutInd.make1 kn) mib) :: !minds
       | None ->
         undumpable := J.Obj [ ("name", J.Str name); ("why", J.Str "not found") ] :: !undumpable);
      drain ()
    end
  in
  drain ();
  let sorted l = List.sort (fun (a, _) (b, _) -> String.compare a b) l in
  (sorted !consts, sorted !minds, List.rev !undumpable)

let unsafe_entry name obj words =
  List.map
    (fun w -> J.Obj [ ("name", J.Str name); ("what", J.Str w); ("object", J.Str obj) ])
    words

(* a constant's unsafe words: its typing flags', and "rewrite_rules" for a symbol (9.x: a
   constant that rewrite rules compute with, which the kernel does not check for
   consistency) *)
let constant_words cb =
  K.unsafe_words (K.constant_flags cb) @ (if K.constant_kind cb = "symbol" then [ "rewrite_rules" ] else [])

(* a block of rewrite rules (9.x), named by its label *)
let rules_entry kn = unsafe_entry (KerName.to_string kn) "rules" [ "rewrite_rules" ]

(* the postulates (Undef constants of modules in the environment, implementations resolved;
   and those of functor bodies and module types, named as the index names them: a target
   there may rest on the task's own only; not those of a copy made by an algebraic
   expression there, `Module WEqProperties (M : WSets) := WEqPropertiesOn M.E M.`, whose
   origin is listed and whose admitted fields are the task's holes) and the objects with
   non-default typing flags (everywhere) *)
let postulates_and_unsafe st h items =
  let postulates = ref [] and unsafe = ref [] and names = ref SSet.empty in
  let copies = ref SSet.empty in
  let rec copied mp =
    SSet.mem (K.modpath_name mp) !copies || match mp with MPdot (p, _) -> copied p | _ -> false
  in
  List.iter
    (function
      | Fb_memo.IConst (where, kn, cb) ->
        let name =
          if where = Module then K.const_name (const_of kn) else K.kn_name kn
        in
        unsafe := List.rev_append (unsafe_entry name "constant" (constant_words cb)) !unsafe;
        let assumed = K.constant_kind cb = "undef" || K.constant_kind cb = "symbol" in
        let listed =
          where = Module
          || (where = Functor || where = Module_type)
             && root_bound (KerName.modpath kn) = None
             && not (copied (KerName.modpath kn))
        in
        if listed && assumed && not (SSet.mem name !names) then begin
          names := SSet.add name !names;
          postulates :=
            (name, J.Obj [ ("type", K.term h (K.constant_type cb)); ("univs", K.constant_univs h cb) ])
            :: !postulates
        end
      | Fb_memo.IMind (where, kn, mib) ->
        let name = if where = Module then K.mind_name (mind_of kn) else K.kn_name kn in
        unsafe := List.rev_append (unsafe_entry name "inductive" (K.unsafe_words (K.mind_flags mib))) !unsafe
      | Fb_memo.IRules (_, kn) -> unsafe := List.rev_append (rules_entry kn) !unsafe
      | Fb_memo.ICopy (_, mp) -> copies := SSet.add (K.modpath_name mp) !copies
      | Fb_memo.IBound _ -> ())
    items;
  (List.sort (fun (a, _) (b, _) -> String.compare a b) !postulates, List.rev !unsafe)

(* the true pairs (a, b), a in [left], b in [right], a <> b, for which [test] holds *)
let pairs test left right =
  List.concat_map
    (fun a ->
      List.filter_map
        (fun b ->
          if Univ.Level.equal a b then None
          else if (try test a b with e when CErrors.noncritical e -> false) then
            Some (J.List [ J.Str (K.level_name a); J.Str (K.level_name b) ])
          else None)
        right)
    left

(* Pairs among the library's levels seen (and Set); and, for constraints that reach out of
   the library (`Constraint u < Coq.Init.Datatypes.list.u0.`), pairs between those levels
   and every other level the graph relates directly to any level of the library. *)
let universes st =
  let levels = List.rev st.levels in
  let all = Univ.Level.set :: levels in
  let is_local l =
    let name = K.level_name l and n = String.length st.prefix in
    String.length name > n && String.sub name 0 n = st.prefix
  in
  let outside = K.adjacent_levels is_local in
  let across test = pairs test levels outside @ pairs test outside levels in
  J.Obj
    [ ("levels", J.list (fun l -> J.Str (K.level_name l)) levels);
      ("le", J.List (pairs K.entails_le all all));
      ("lt", J.List (pairs K.entails_lt all all));
      ( "external",
        J.Obj
          [ ("levels", J.list (fun l -> J.Str (K.level_name l)) outside);
            ("le", J.List (across K.entails_le));
            ("lt", J.List (across K.entails_lt)) ] ) ]

let library_of_name = Fb_memo.library_named

let dump_targets ?(mode = `Shared) nonce library names =
  let lib = library_of_name library in
  let items = items_of lib in
  Fun.protect ~finally:(fun () -> K.bound_name := fun _ -> None) @@ fun () ->
  let st =
    { lib; prefix = library ^ "."; todo_c = Queue.create (); todo_m = Queue.create ();
      todo_l = Queue.create (); ix = index_of items; seen = SSet.empty; levels = [];
      level_names = SSet.empty }
  in
  let h = hooks st in
  let unique = List.sort_uniq String.compare names in
  let local = Fb_memo.new_local () in
  let targets = List.map (fun n -> (n, target mode local st h n)) unique in
  let postulates, unsafe = postulates_and_unsafe st h items in
  let consts, minds, undumpable = closure_entries st h in
  let missing =
    List.filter_map
      (fun (n, t) ->
        match t with
        | J.Obj (("found", J.Bool false) :: ("why", why) :: _) ->
          Some (J.Obj [ ("name", J.Str n); ("why", why) ])
        | _ -> None)
      targets
  in
  let json =
    J.Obj
      (header "targets" lib
      @ [ ("targets", J.Obj targets);
          ("closure", J.Obj [ ("constants", J.Obj consts); ("inductives", J.Obj minds) ]);
          ("postulates", J.Obj postulates);
          ("unsafe", J.List unsafe);
          ("universes", universes st);
          ("undumpable", J.List (missing @ undumpable)) ])
  in
  print_framed nonce json

(* ---- the `library` dump ------------------------------------------------------------------ *)

let refs_of cb =
  let names = ref SSet.empty in
  let add s = names := SSet.add s !names in
  let h = { K.const = (fun c -> add (K.const_name c)); K.mind = (fun m -> add (K.mind_name m)); K.level = ignore } in
  K.constant_refs h cb;
  (match Fb_memo.opaque_body cb with Some c -> ignore (K.term h c) | None -> ());
  J.list J.str (SSet.elements !names)

let dump_library nonce library =
  let lib = library_of_name library in
  let local = Fb_memo.new_local () in
  let objects = ref [] and unsafe = ref [] and undumpable = ref [] in
  let seen = ref SSet.empty in
  (* a module alias (`Module M2 := M.`) shows M's objects again under M2: once is enough *)
  let fresh where name =
    if where <> Module then true
    else if SSet.mem name !seen then false
    else (seen := SSet.add name !seen; true)
  in
  (* the assumptions of an object of the environment; an object whose walk fails is named
     in `undumpable` (and its assumptions are null) *)
  let ask name root =
    try K.assumptions K.no_hooks (Fb_memo.assumptions ~local root)
    with e ->
      let why = "its assumptions cannot be computed: " ^ Printexc.to_string e in
      undumpable := J.Obj [ ("name", J.Str name); ("why", J.Str why) ] :: !undumpable;
      J.Null
  in
  let add where name obj kind ty words flags assumptions refs =
    unsafe := List.rev_append (unsafe_entry name obj words) !unsafe;
    objects :=
      J.Obj
        [ ("name", J.Str name); ("where", J.Str (where_word where)); ("object", J.Str obj);
          ("kind", kind); ("type", ty); ("flags", K.flags flags);
          ("assumptions", assumptions); ("refs", refs) ]
      :: !objects
  in
  walk_library lib (function
    | Fb_memo.IConst (where, kn, cb) ->
      let c = if where = Module then const_of kn else Constant.make1 kn in
      let name = if where = Module then K.const_name c else KerName.to_string kn in
      if fresh where name then begin
        let assumptions, refs =
          if where = Module then (ask name (GlobRef.ConstRef c), J.Null) else (J.Null, refs_of cb)
        in
        add where name "constant" (J.Str (K.constant_kind cb))
          (K.term K.no_hooks (K.constant_type cb)) (constant_words cb) (K.constant_flags cb)
          assumptions refs
      end
    | Fb_memo.IMind (where, kn, mib) ->
      let m = if where = Module then mind_of kn else MutInd.make1 kn in
      let name = if where = Module then K.mind_name m else KerName.to_string kn in
      if fresh where name then begin
        let assumptions = if where = Module then ask name (GlobRef.IndRef (m, 0)) else J.Null in
        add where name "inductive" J.Null J.Null
          (K.unsafe_words (K.mind_flags mib)) (K.mind_flags mib) assumptions J.Null
      end
    | Fb_memo.IRules (_, kn) -> unsafe := List.rev_append (rules_entry kn) !unsafe
    | Fb_memo.IBound _ | Fb_memo.ICopy _ -> ());
  let json =
    J.Obj
      (header "library" lib
      @ [ ("objects", J.List (List.rev !objects));
          ("unsafe", J.List (List.rev !unsafe));
          ("undumpable", J.List (List.rev !undumpable)) ])
  in
  print_framed nonce json
