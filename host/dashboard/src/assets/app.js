// Glovebox dashboard: live updates. The server sends a `change` event on
// /ui/events naming the parts of the ledger that changed; a page that shows
// one of them fetches itself again and swaps its navigation and content.
// Nothing here builds HTML from data: the server renders (and escapes) it.
"use strict";
(function () {
  var watched = (document.body.getAttribute("data-watch") || "").split(" ").filter(Boolean);
  if (!watched.length || !window.EventSource) return;
  var live = document.getElementById("live");
  var pending = false;
  var busy = false;

  // The operator is typing, or has started filling a form of the page (a
  // rescue's description, say): the page is not swapped under them.
  function typing() {
    var el = document.activeElement;
    if (el && el.closest && el.closest("main") && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName) && el.value !== "") return true;
    var main = document.getElementById("main");
    if (!main) return false;
    return Array.prototype.some.call(main.querySelectorAll("textarea, input"), function (f) {
      return f.type !== "hidden" && f.value !== f.defaultValue;
    });
  }

  function refresh() {
    if (busy) { pending = true; return; }
    if (typing()) { pending = true; return; }
    busy = true;
    pending = false;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (!text) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        ["nav", "main"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var old = document.getElementById(id);
          if (fresh && old) old.replaceWith(document.importNode(fresh, true));
        });
        live = document.getElementById("live");
        if (live) live.className = "live on";
        document.body.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (pending) setTimeout(refresh, 250);
      });
  }

  var source = new EventSource("/ui/events");
  source.addEventListener("open", function () { if (live) live.className = "live on"; });
  source.addEventListener("error", function () { if (live) live.className = "live off"; });
  source.addEventListener("change", function (e) {
    var parts = String(e.data || "").split(" ");
    if (parts.some(function (p) { return watched.indexOf(p) >= 0; })) refresh();
  });
  document.addEventListener("focusout", function () { if (pending) setTimeout(refresh, 250); });
  window.addEventListener("beforeunload", function () { source.close(); });
})();
