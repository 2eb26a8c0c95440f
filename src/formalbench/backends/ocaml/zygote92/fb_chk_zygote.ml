(* formalbench's replay zygote for Rocq 9.2: `coqchk -silent -norec Candidate FLAGS -R . ""`
   with the candidate's dependencies already loaded (admitted, as -norec admits them).

   Arguments: the replay's flags (-silent, -Q/-R DIR PREFIX, -impredicative-set,
   -indices-matter), then `-stub LIB`: a library of ours (FbStub.vo in the current folder,
   compiled from the candidate's `Require` sentences, no other text) checked with -norec at
   start, so that every library it depends on is loaded into the environment unchecked. Then
   requests on stdin, one line each, `ID<TAB>SECONDS<TAB>FOLDER`: fork; the child chdirs to
   FOLDER, binds it to the empty prefix (so `Candidate` is FOLDER's Candidate.vo) and runs
   coqchk's own `recheck_library ~norec:[Candidate]` on the environment it inherited (the
   dependencies already loaded are not read again); exit 0 when the checker accepts it, 1
   otherwise (the caller then asks a cold coqchk for its verdict and message). Answers
   `exit ID CODE` / `killed ID` as fb_zygote does. *)

open Names
open Coq_checklib

let fail msg = prerr_endline ("fb_chk_zygote: " ^ msg); exit 2

let dirpath s =
  if s = "" then CheckLibrary.default_root_prefix
  else
    let s = if s = "Coq" then "Corelib" else s in
    DirPath.make (List.rev_map Id.of_string (String.split_on_char '.' s))

let add_tree unix_path root =
  if System.exists_dir unix_path then begin
    let prefix = DirPath.repr root in
    List.iter (fun (physical, logical) ->
        match List.rev_map Id.of_string logical with
        | ids -> CheckLibrary.add_load_path (physical, DirPath.make (ids @ prefix))
        | exception CErrors.UserError _ -> ())
      (System.all_subdirs ~unix_path);
    CheckLibrary.add_load_path (unix_path, root)
  end

let () =
  let args = List.tl (Array.to_list Sys.argv) in
  let impredicative = ref false and indices = ref false and stub = ref None in
  let includes = ref [] in
  let rec parse = function
    | [] -> ()
    | "-silent" :: rest -> Flags.quiet := true; parse rest
    | "-impredicative-set" :: rest -> impredicative := true; parse rest
    | "-indices-matter" :: rest -> indices := true; parse rest
    | ("-Q" | "-R") :: d :: p :: rest -> includes := (d, dirpath p) :: !includes; parse rest
    | "-stub" :: s :: rest -> stub := Some s; parse rest
    | other :: _ -> fail ("unknown argument " ^ other) in
  parse args;
  let stub = match !stub with Some s -> s | None -> fail "no -stub" in
  let _feeder = Feedback.(add_feeder (console_feedback_listener Format.err_formatter)) in
  let senv =
    try
      (match Boot.Env.maybe_init ~boot:false ~coqlib:None ~warn_ignored_coqlib:(fun () -> ()) with
       | Boot.Env.Boot -> ()
       | Boot.Env.Env env ->
         let corelib = DirPath.make [Id.of_string "Corelib"] in
         add_tree (Boot.Path.to_string (Boot.Env.corelib env)) corelib;
         add_tree (Boot.Path.to_string (Boot.Env.plugins env)) corelib;
         add_tree (Boot.Path.to_string (Boot.Env.user_contrib env)) CheckLibrary.default_root_prefix;
         List.iter (fun s -> add_tree s CheckLibrary.default_root_prefix)
           (Envars.xdg_dirs ~warn:(fun _ -> ()));
         List.iter (fun s -> add_tree s CheckLibrary.default_root_prefix) (Envars.coqpath ());
         if System.exists_dir "." then
           CheckLibrary.add_load_path (".", CheckLibrary.default_root_prefix));
      List.iter (fun (d, p) -> add_tree d p) (List.rev !includes);
      let senv = Safe_typing.empty_environment in
      let senv = Safe_typing.set_impredicative_set !impredicative senv in
      let senv = Safe_typing.set_indices_matter !indices senv in
      let senv = Safe_typing.set_VM false senv in
      let senv = Safe_typing.set_allow_sprop true senv in
      let senv = Safe_typing.set_native_compiler false senv in
      let lib name = CheckLibrary.LogicalFile { dirpath = []; basename = name } in
      fst (CheckLibrary.recheck_library senv ~norec:[lib stub] ~admit:[] ~check:[])
    with exn -> fail ("start: " ^ Pp.string_of_ppcmds (CErrors.print exn)) in
  Fb_serve.serve (fun () ->
      try
        (* `-R . ""` of the replay: the load path keeps folders canonical, so the child
           binds its own folder, as a cold coqchk started there binds it *)
        CheckLibrary.add_load_path (Sys.getcwd (), CheckLibrary.default_root_prefix);
        let lib = CheckLibrary.LogicalFile { dirpath = []; basename = "Candidate" } in
        ignore (CheckLibrary.recheck_library senv ~norec:[lib] ~admit:[] ~check:[]);
        0
      with exn ->
        (try prerr_endline (Pp.string_of_ppcmds (CErrors.print exn)) with _ -> ());
        1)
