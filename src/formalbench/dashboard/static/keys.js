// Keyboard shortcuts of the review dashboard. Never while the reviewer types in a field.
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable ||
      (tag === "INPUT" && !/^(button|submit|checkbox|radio|reset)$/i.test(el.type));
  }
  function go(rel) {
    var link = document.querySelector('a[rel="' + rel + '"]');
    if (link) window.location.href = link.href;
  }
  function click(id) {
    var el = document.getElementById(id);
    if (el) el.click();
  }
  function decide(id) {
    var reviewer = document.getElementById("reviewer");
    if (reviewer && !reviewer.value.trim()) {
      reviewer.focus();
      reviewer.placeholder = "your name first";
      return;
    }
    click(id);
  }
  var rows = [];
  var current = -1;
  function select(i) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, j) { r.classList.toggle("selected", j === current); });
    rows[current].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("DOMContentLoaded", function () {
    rows = Array.prototype.slice.call(document.querySelectorAll("#problems tbody tr"));
    var help = document.getElementById("help");
    var toggle = document.getElementById("help-toggle");
    if (toggle && help) toggle.addEventListener("click", function () { help.hidden = !help.hidden; });
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") {
      if (typing(document.activeElement)) document.activeElement.blur();
      var help = document.getElementById("help");
      if (help) help.hidden = true;
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    var page = document.body.dataset.page;
    var key = ev.key;
    var handled = true;
    if (key === "?") {
      var h = document.getElementById("help");
      if (h) h.hidden = !h.hidden;
    } else if (page === "list") {
      if (key === "j" || key === "n") select(current + 1);
      else if (key === "k" || key === "p") select(current - 1);
      else if ((key === "Enter" || key === "o") && current >= 0) window.location.href = rows[current].dataset.href;
      else if (key === "/") { var s = document.getElementById("search"); if (s) s.focus(); }
      else handled = false;
    } else if (page === "problem") {
      if (key === "j" || key === "n") go("next");
      else if (key === "k" || key === "p") go("prev");
      else if (key === "a") decide("accept");
      else if (key === "r") decide("reject");
      else if (key === "c") click("recheck-button");
      else if (key === "e") { var ed = document.getElementById("editor"); if (ed) ed.focus(); }
      else handled = false;
    } else handled = false;
    if (handled) ev.preventDefault();
  });
})();
