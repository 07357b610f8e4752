// Live pages: the server sends a notice per change (server-sent events);
// the page fetches its own main part again and swaps it in, keeping which
// <details> were open and a form the user is filling in. No reload, no
// framework.
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

  // inUse reports whether the user has focused or changed a form and not
  // sent it yet: swapping it would take their typing away.
  function inUse(form) {
    if (form.contains(document.activeElement)) { return true; }
    return Array.prototype.some.call(form.elements, function (el) {
      if (el.options) {
        // Without a selected attribute, a select starts at its first option.
        var first = 0;
        Array.prototype.forEach.call(el.options, function (o, i) { if (o.defaultSelected) { first = i; } });
        return el.selectedIndex !== first;
      }
      return "defaultValue" in el && el.value !== el.defaultValue;
    });
  }

  // swap replaces main's content with html's. A form[data-keep] in use
  // stays where it is, untouched (moving it would blur it); what is around
  // it is replaced.
  function swap(main, html) {
    var next = document.createElement("div");
    next.innerHTML = html;
    var kept = main.querySelector("form[data-keep]");
    var fresh = next.querySelector("form[data-keep]");
    if (!kept || !fresh || kept.parentNode !== main || fresh.parentNode !== next || !inUse(kept)) {
      main.replaceChildren.apply(main, Array.prototype.slice.call(next.childNodes));
      return;
    }
    var before = [], after = [], seen = false;
    Array.prototype.slice.call(next.childNodes).forEach(function (n) {
      if (n === fresh) { seen = true; } else if (seen) { after.push(n); } else { before.push(n); }
    });
    while (main.firstChild !== kept) { main.removeChild(main.firstChild); }
    while (kept.nextSibling) { main.removeChild(kept.nextSibling); }
    before.forEach(function (n) { main.insertBefore(n, kept); });
    after.forEach(function (n) { main.appendChild(n); });
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
      swap(main, html);
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

  // A stream is a connection held for as long as it is open, and a
  // browser opens six at most to one host over HTTP/1.1: a tab in the
  // background lets go of its stream, or a few open tabs would leave none
  // for loading pages. Back in front, it catches up.
  var source = null;
  function connect() {
    if (source) { return; }
    source = new EventSource("/events");
    source.addEventListener("hello", function (e) {
      status(true, "live");
      // Anything that changed while the stream was down is fetched now.
      if (String(e.data) !== document.body.dataset.version) {
        document.body.dataset.version = e.data;
        refresh();
      }
    });
    source.addEventListener("change", function (e) {
      document.body.dataset.version = e.data;
      refresh();
    });
    source.onerror = function () { status(false, "reconnecting…"); };
  }
  function disconnect() {
    if (!source) { return; }
    source.close();
    source = null;
    status(false, "paused");
  }

  setBars(document);
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) { disconnect(); } else { connect(); }
  });
  if (document.hidden) { status(false, "paused"); } else { connect(); }
})();
