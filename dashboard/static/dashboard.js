// Shows why an htmx request failed (htmx does not swap error responses).
// The message is set as text, never parsed as HTML.
document.addEventListener("htmx:responseError", function (e) {
  var box = document.getElementById("flash");
  if (!box) return;
  var xhr = e.detail.xhr;
  box.textContent = "Request failed (" + xhr.status + "): " + String(xhr.responseText || "").slice(0, 300);
  box.hidden = false;
});
document.addEventListener("htmx:sendError", function () {
  var box = document.getElementById("flash");
  if (!box) return;
  box.textContent = "The dashboard did not answer; is lockstep serve still running?";
  box.hidden = false;
});
