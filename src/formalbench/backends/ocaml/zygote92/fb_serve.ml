(* The request loop that formalbench's zygotes share (fb_zygote, fb_chk_zygote): requests on
   stdin, one line each, `ID<TAB>SECONDS<TAB>FOLDER`. For each, fork: the child's stdout and
   stderr go to FOLDER/.zygote.out and .zygote.err, its stdin is /dev/null, it chdirs to
   FOLDER, runs `work ()` (its exit code) and exits; the parent answers `started ID`, and when
   the child ends `exit ID CODE` or `killed ID` (a signal; past its SECONDS the parent sends
   SIGKILL). The parent runs nothing of a request but the fork. End of stdin: every child is
   killed and the parent exits. *)

let redirect fd path =
  let f = Unix.openfile path [Unix.O_WRONLY; Unix.O_CREAT; Unix.O_TRUNC; Unix.O_CLOEXEC] 0o600 in
  Unix.dup2 ~cloexec:false f fd;
  Unix.close f

let child folder (work : unit -> int) =
  let code =
    try
      redirect Unix.stdout (Filename.concat folder ".zygote.out");
      redirect Unix.stderr (Filename.concat folder ".zygote.err");
      let null = Unix.openfile "/dev/null" [Unix.O_RDONLY] 0 in
      Unix.dup2 ~cloexec:false null Unix.stdin;
      Unix.close null;
      Sys.chdir folder;
      work ()
    with _ -> 125
  in
  flush_all ();
  Stdlib.exit code

let serve (work : unit -> int) =
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
       | 0 -> child folder work
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
