// Shows why an htmx request failed (htmx does not swap error responses).
// The message is set as text, never parsed as HTML. The element whose
// refresh failed is dimmed (its content is stale) and the message stays
// until a later request for the same path succeeds, as a periodic refresh
// does once the database is back.
function lockstepPath(e) {
  var p = e.detail && e.detail.pathInfo;
  return p ? String(p.requestPath || "") : "";
}
function lockstepFlash(e, text) {
  var box = document.getElementById("flash");
  if (!box) return;
  box.textContent = text;
  box.dataset.path = lockstepPath(e);
  box.hidden = false;
  if (e.detail && e.detail.elt && e.detail.elt.classList) e.detail.elt.classList.add("stale");
}
document.addEventListener("htmx:responseError", function (e) {
  var xhr = e.detail.xhr;
  lockstepFlash(e, "Request failed (" + xhr.status + "): " + String(xhr.responseText || "").slice(0, 300));
});
document.addEventListener("htmx:sendError", function (e) {
  lockstepFlash(e, "The dashboard did not answer; is lockstep serve still running?");
});
document.addEventListener("htmx:afterRequest", function (e) {
  if (!e.detail.successful) return;
  if (e.detail.elt && e.detail.elt.classList) e.detail.elt.classList.remove("stale");
  var box = document.getElementById("flash");
  if (!box || box.hidden || !box.dataset.path || box.dataset.path !== lockstepPath(e)) return;
  box.hidden = true;
  box.textContent = "";
  delete box.dataset.path;
});
// The queues table reloads every 2 seconds, which would wipe a max
// workers field while it is being typed into: skip the reload then.
document.addEventListener("htmx:beforeRequest", function (e) {
  var elt = e.detail && e.detail.elt;
  // Only the table's own reload: a form's post comes from the form.
  if (!elt || elt.id !== "queues") return;
  var active = document.activeElement;
  if (active && active.tagName === "INPUT" && elt.contains(active)) e.preventDefault();
});
