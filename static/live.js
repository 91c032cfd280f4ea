// Reloads an admin page that asks for it (body data-refresh, seconds)
// while nobody is filling in a form on it. Pages work without it.
(function () {
  var s = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (!(s > 0)) return;
  setInterval(function () {
    if (document.hidden) return;
    var busy = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    var typed = Array.prototype.some.call(document.querySelectorAll("input[type=text],input[type=password],textarea"), function (el) { return el.value !== ""; });
    var open = document.querySelector("details[open]");
    if (!busy && !typed && !open) location.reload();
  }, s * 1000);
})();
