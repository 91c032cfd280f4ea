// Folded filters (details.fold) open by themselves on a screen wide
// enough for them; on a phone they wait for a tap.
(function () {
  if (!window.matchMedia || !window.matchMedia("(min-width: 40.01rem)").matches) return;
  Array.prototype.forEach.call(document.querySelectorAll("details.fold"), function (d) { d.open = true; });
})();

// Refreshes an admin page that asks for it (body data-refresh, seconds)
// while nobody is filling in a form on it. Pages work without it. The
// refresh says so (X-Oncegate-Live), so it does not count as activity: an
// unattended browser still signs out after the idle limit, and the next
// refresh then shows the sign-in page.
(function () {
  var s = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (!(s > 0) || !window.fetch || !window.DOMParser) return;
  setInterval(function () {
    if (document.hidden) return;
    var busy = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    var typed = Array.prototype.some.call(document.querySelectorAll("input[type=text],input[type=password],textarea"), function (el) { return el.value !== ""; });
    var open = document.querySelector("details[open]:not(.fold)");
    // Never move what is under the pointer: a card or a row one is about
    // to click stays where it is.
    var pointed = document.querySelector("main .card:hover, main tr:hover, main .rows:hover");
    if (busy || typed || open || pointed) return;
    fetch(location.href, { headers: { "X-Oncegate-Live": "1" }, credentials: "same-origin", redirect: "manual" })
      .then(function (r) {
        if (r.status !== 200) { location.reload(); return; }
        return r.text().then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          document.title = doc.title;
          document.body.innerHTML = doc.body.innerHTML;
        });
      })
      .catch(function () {});
  }, s * 1000);
})();
