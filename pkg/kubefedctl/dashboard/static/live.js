// Live pages: the server sends a notice per change (server-sent events);
// the page fetches its own main part again and swaps it in, keeping which
// <details> were open. No reload, no framework.
(function () {
  "use strict";
  var indicator = document.getElementById("live");
  var busy = false, again = false;

  function setBars(root) {
    // Widths come from data attributes: the CSP allows no inline styles.
    root.querySelectorAll(".bar[data-width]").forEach(function (b) {
      b.style.width = (3 * Number(b.dataset.width)) + "px";
    });
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    fetch(url, { cache: "no-store" }).then(function (r) {
      // An error page (the run ended, the object went away) is not swapped in.
      var type = r.headers.get("Content-Type") || "";
      if (!(r.ok || r.status === 404) || type.indexOf("text/html") !== 0) {
        throw new Error("refresh: " + r.status);
      }
      return r.text();
    }).then(function (html) {
      var main = document.getElementById("main");
      var open = {};
      main.querySelectorAll("details[id]").forEach(function (d) { if (d.open) { open[d.id] = true; } });
      main.innerHTML = html;
      main.querySelectorAll("details[id]").forEach(function (d) { if (open[d.id]) { d.open = true; } });
      setBars(main);
    }).catch(function () {}).finally(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }

  function status(on, text) {
    indicator.textContent = text;
    indicator.className = "live " + (on ? "on" : "off");
  }

  setBars(document);
  var source = new EventSource("/events");
  source.addEventListener("hello", function (e) {
    status(true, "live");
    // Anything that changed while the stream was down is fetched now.
    if (String(e.data) !== document.body.dataset.version) { refresh(); }
  });
  source.addEventListener("change", function (e) {
    document.body.dataset.version = e.data;
    refresh();
  });
  source.onerror = function () { status(false, "reconnecting…"); };
})();
