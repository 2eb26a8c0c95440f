(* formalbench's compile zygote for Rocq 9.2: `coqc` (Ccompile.compile, BuildVo) cut in two.

   The parent does what coqc does before it reads the file: arguments, runtime, the document
   (`Stm.new_doc` with the command line's injections: the prelude and the `-rfrom` libraries
   of the pool's key, loaded, not imported) and the init vernaculars. It never reads a
   candidate. Then it serves requests (fb_serve.ml): per request it forks, and the child
   alone does the rest of coqc's compile in the request's folder (chdir: the main file and
   the output are coqc's own relative names, `Candidate.v` -> `Candidate.vo`) and exits with
   coqc's exit code. *)

open Coqargs
open Coqcargs

let child_compile ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state =
  let open Vernac.State in
  let output_native_objects = match opts.config.native_compiler with
    | NativeOff -> false | NativeOn {ondemand} -> not ondemand in
  let ldir = Stm.get_ldir ~doc:state.doc in
  Aux_file.start_aux_file ~aux_file:(Aux_file.aux_file_name_for long_out) ~v_file:long_in;
  let dump = match copts.glob_out with
    | None -> Dumpglob.MultFiles { vofile = long_out; vfile = long_in }
    | Some NoGlob -> Dumpglob.NoGlob
    | Some (GlobFile f) -> Dumpglob.File f in
  Dumpglob.push_output dump;
  Dumpglob.dump_string ("F" ^ Names.DirPath.to_string ldir ^ "\n");
  let wall_clock1 = Unix.gettimeofday () in
  let check = Stm.AsyncOpts.(stm_opts.async_proofs_mode = APoff) in
  let source = Loc.InFile { dirpath = Some (Names.DirPath.to_string ldir); file = long_in } in
  let state = Vernac.load_vernac ~echo ~check ~state ~source long_in in
  let fullstate = Stm.finish ~doc:state.doc in
  Common_compile.ensure_no_pending_proofs ~filename:long_in fullstate;
  Stm.join ~doc:state.doc;
  let wall_clock2 = Unix.gettimeofday () in
  Library.save_library_to ~output_native_objects Library.ProofsTodoNone ldir long_out;
  Aux_file.record_in_aux_at "vo_compile_time"
    (Printf.sprintf "%.3f" (wall_clock2 -. wall_clock1));
  Aux_file.stop_aux_file ()

let run_child ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state () =
  try
    child_compile ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state;
    flush_all (); 0
  with exn ->
    flush_all ();
    Topfmt.print_err_exn exn;
    flush_all ();
    CErrors.exit_code exn

let zygote_run ((copts, _), stm_opts) ~opts injections =
  let _feeder = Feedback.add_feeder Coqloop.coqloop_feed in
  try
    let f_in, echo = match copts.compile_file with
      | Some f -> f | None -> Common_compile.fatal_error (Pp.str "no placeholder file") in
    let long_in, long_out =
      Common_compile.ensure_exists_with_prefix ~src:f_in ~tgt:copts.compilation_output_name
        ~src_ext:".v" ~tgt_ext:".vo" in
    let doc, sid = Topfmt.(in_phase ~phase:LoadingPrelude) Stm.new_doc
        Stm.{ doc_type = VoDoc long_out; injections } in
    let state = Vernac.State.{ doc; sid; proof = None;
                               time = Option.map Vernac.make_time_output opts.config.time } in
    let state = Load.load_init_vernaculars opts ~state in
    Topfmt.(in_phase ~phase:CompilationPhase)
      (fun state -> Fb_serve.serve (run_child ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state)) state
  with exn ->
    flush_all (); Topfmt.print_err_exn exn; flush_all ();
    exit (CErrors.exit_code exn)

let custom = Coqtop.{
  parse_extra = (fun opts extras ->
    let color_mode, extras = Colors.parse_extra_colors ~emacs:opts.config.print_emacs extras in
    let stm_opts, extras = Stmargs.parse_args opts extras in
    let coqc_opts = Coqcargs.parse extras in
    ((coqc_opts, color_mode), stm_opts), []);
  usage = Boot.Usage.{ executable_name = "fb_zygote"; extra_args = "Candidate.v";
                       extra_options = "" };
  init_extra = (fun ((_, color_mode), _) injections ~opts:_ ->
    Flags.quiet := true;
    System.trust_file_cache := true;
    Colors.init_color color_mode;
    injections);
  run = zygote_run;
  initial_args = Coqargs.default;
}

let () = Coqtop.start_coq custom (List.tl (Array.to_list Sys.argv))
