(* formalbench's compile zygote for Rocq 9.2: `coqc` (Ccompile.compile, BuildVo) cut in two.

   The parent does what coqc does before it reads the file: arguments, runtime, the document
   (`Stm.new_doc` with the command line's injections: the prelude and the `-rfrom` libraries
   of the pool's key, loaded, not imported) and the init vernaculars. It never reads a
   candidate. Then it serves requests on stdin, one line each, `ID<TAB>SECONDS<TAB>FOLDER`:
   it forks, and the child alone does the rest of coqc's compile in FOLDER (chdir: the main
   file and the output are coqc's own relative names, `Candidate.v` -> `Candidate.vo`), its
   stdout/stderr in FOLDER/.zygote.out and .zygote.err, and exits with coqc's exit code.
   The parent answers `started ID` and, when the child ends, `exit ID CODE` (its exit
   status) or `killed ID` (a signal: past its SECONDS, the parent kills it). End of stdin:
   every child is killed and the parent exits. *)

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

let redirect fd path =
  let f = Unix.openfile path [Unix.O_WRONLY; Unix.O_CREAT; Unix.O_TRUNC; Unix.O_CLOEXEC] 0o600 in
  Unix.dup2 ~cloexec:false f fd;
  Unix.close f

let run_child ~opts ~stm_opts ~copts ~echo ~long_in ~long_out folder state =
  let code =
    try
      redirect Unix.stdout (Filename.concat folder ".zygote.out");
      redirect Unix.stderr (Filename.concat folder ".zygote.err");
      Unix.dup2 ~cloexec:false (Unix.openfile "/dev/null" [Unix.O_RDONLY] 0) Unix.stdin;
      Sys.chdir folder;
      child_compile ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state;
      flush_all (); 0
    with exn ->
      flush_all ();
      Topfmt.print_err_exn exn;
      flush_all ();
      CErrors.exit_code exn
  in
  Stdlib.exit code

let serve ~opts ~stm_opts ~copts ~echo ~long_in ~long_out state =
  let children : (int, string * float) Hashtbl.t = Hashtbl.create 8 in
  let say line = print_string line; print_newline () in
  let reap () =
    let rec go () =
      match Unix.waitpid [Unix.WNOHANG] (-1) with
      | 0, _ -> ()
      | pid, status ->
        (match Hashtbl.find_opt children pid with
         | Some (id, _) ->
           Hashtbl.remove children pid;
           say (match status with
               | Unix.WEXITED c -> Printf.sprintf "exit %s %d" id c
               | Unix.WSIGNALED _ | Unix.WSTOPPED _ -> Printf.sprintf "killed %s" id)
         | None -> ());
        go ()
      | exception Unix.Unix_error (Unix.ECHILD, _, _) -> ()
      | exception Unix.Unix_error (Unix.EINTR, _, _) -> go ()
    in go () in
  let expire () =
    let now = Unix.gettimeofday () in
    Hashtbl.iter (fun pid (_, deadline) ->
        if now > deadline then (try Unix.kill pid Sys.sigkill with _ -> ())) children in
  let pending = Buffer.create 256 in
  let chunk = Bytes.create 4096 in
  let handle line =
    match String.split_on_char '\t' line with
    | [id; seconds; folder] ->
      flush_all ();
      (match Unix.fork () with
       | 0 -> run_child ~opts ~stm_opts ~copts ~echo ~long_in ~long_out folder state
       | pid ->
         Hashtbl.replace children pid (id, Unix.gettimeofday () +. float_of_string seconds);
         say ("started " ^ id))
    | _ -> say ("bad " ^ String.escaped line) in
  let rec loop () =
    let ready = try let r, _, _ = Unix.select [Unix.stdin] [] [] 0.01 in r <> []
      with Unix.Unix_error (Unix.EINTR, _, _) -> false in
    let eof =
      ready && (match Unix.read Unix.stdin chunk 0 (Bytes.length chunk) with
          | 0 -> true
          | n -> Buffer.add_subbytes pending chunk 0 n; false) in
    let rec lines () =
      let s = Buffer.contents pending in
      match String.index_opt s '\n' with
      | None -> ()
      | Some i ->
        Buffer.clear pending;
        Buffer.add_string pending (String.sub s (i + 1) (String.length s - i - 1));
        handle (String.sub s 0 i); lines () in
    lines ();
    reap (); expire ();
    if eof then begin
      Hashtbl.iter (fun pid _ -> try Unix.kill pid Sys.sigkill with _ -> ()) children;
      exit 0 end
    else loop () in
  say "ready";
  loop ()

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
      (serve ~opts ~stm_opts ~copts ~echo ~long_in ~long_out) state
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
