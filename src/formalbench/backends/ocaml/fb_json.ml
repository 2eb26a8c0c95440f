(* formalbench: a small JSON emitter for the kernel dump (Coq's dependencies have no JSON
   library). Strings are written as JSON wants them whatever bytes they hold: quote and backslash
   escaped, control characters as \u00XX, valid UTF-8 passed through, and every byte that is
   not part of valid UTF-8 written as U+FFFD (so the output is always valid UTF-8 JSON;
   kernel names are valid UTF-8, so nothing of theirs is changed). Portable: no Coq API. *)

type t =
  | Null
  | Bool of bool
  | Int of int
  | Str of string
  | List of t list
  | Obj of (string * t) list

(* length of the valid UTF-8 sequence starting at [i], or 0 *)
let utf8_length s i =
  let n = String.length s in
  let byte k = Char.code s.[k] in
  let cont k = k < n && byte k land 0xC0 = 0x80 in
  let c = byte i in
  if c < 0x80 then 1
  else if c >= 0xC2 && c <= 0xDF && cont (i + 1) then 2
  else if c >= 0xE0 && c <= 0xEF && cont (i + 1) && cont (i + 2) then
    let c1 = byte (i + 1) in
    if (c = 0xE0 && c1 < 0xA0) || (c = 0xED && c1 >= 0xA0) then 0 else 3
  else if c >= 0xF0 && c <= 0xF4 && cont (i + 1) && cont (i + 2) && cont (i + 3) then
    let c1 = byte (i + 1) in
    if (c = 0xF0 && c1 < 0x90) || (c = 0xF4 && c1 >= 0x90) then 0 else 4
  else 0

let add_string buf s =
  Buffer.add_char buf '"';
  let n = String.length s in
  let i = ref 0 in
  while !i < n do
    let c = s.[!i] in
    (match c with
     | '"' -> Buffer.add_string buf "\\\""; incr i
     | '\\' -> Buffer.add_string buf "\\\\"; incr i
     | '\n' -> Buffer.add_string buf "\\n"; incr i
     | '\r' -> Buffer.add_string buf "\\r"; incr i
     | '\t' -> Buffer.add_string buf "\\t"; incr i
     | c when Char.code c < 0x20 || Char.code c = 0x7F ->
       Buffer.add_string buf (Printf.sprintf "\\u%04x" (Char.code c)); incr i
     | _ ->
       let len = utf8_length s !i in
       if len = 0 then (Buffer.add_string buf "\\ufffd"; incr i)
       else (Buffer.add_string buf (String.sub s !i len); i := !i + len))
  done;
  Buffer.add_char buf '"'

let rec add buf = function
  | Null -> Buffer.add_string buf "null"
  | Bool b -> Buffer.add_string buf (if b then "true" else "false")
  | Int n -> Buffer.add_string buf (string_of_int n)
  | Str s -> add_string buf s
  | List l ->
    Buffer.add_char buf '[';
    List.iteri (fun k v -> if k > 0 then Buffer.add_char buf ','; add buf v) l;
    Buffer.add_char buf ']'
  | Obj l ->
    Buffer.add_char buf '{';
    List.iteri
      (fun k (key, v) ->
        if k > 0 then Buffer.add_char buf ',';
        add_string buf key;
        Buffer.add_char buf ':';
        add buf v)
      l;
    Buffer.add_char buf '}'

let to_string v =
  let buf = Buffer.create 4096 in
  add buf v;
  Buffer.contents buf

let str s = Str s
let list f l = List (List.map f l)
let array f a = List (Array.to_list (Array.map f a))
let opt f = function None -> Null | Some x -> f x
