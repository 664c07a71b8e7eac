// The overview's live action log: appends each event from the server's
// event stream as text (never as HTML).
(function () {
  "use strict";
  var list = document.getElementById("live");
  var state = document.getElementById("live-state");
  if (!list || !window.EventSource) { return; }
  var after = list.getAttribute("data-after") || "0";
  var src = new EventSource("/live?after=" + encodeURIComponent(after));
  var keys = ["session", "kind", "tool", "decision", "action", "status", "approval_id", "memory_id"];
  function line(type, data, id) {
    var parts = [];
    keys.forEach(function (k) { if (typeof data[k] === "string" && data[k] !== "") { parts.push(data[k]); } });
    if (typeof data.seq === "number") { parts.push("#" + data.seq); }
    var li = document.createElement("li");
    li.setAttribute("data-seq", id);
    li.className = "new";
    var t = document.createElement("time");
    t.textContent = new Date().toISOString().slice(11, 19);
    var s = document.createElement("span");
    s.className = "type";
    s.textContent = type;
    li.appendChild(t);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(s);
    li.appendChild(document.createTextNode(" " + parts.join(" · ")));
    list.insertBefore(li, list.firstChild);
    while (list.children.length > 200) { list.removeChild(list.lastChild); }
  }
  ["ledger.append", "decision.written", "decision.evaluated", "review.action", "approval.resolved", "approval.queued"].forEach(function (type) {
    src.addEventListener(type, function (ev) {
      var data = {};
      try { data = JSON.parse(ev.data); } catch (e) { return; }
      line(type, data, ev.lastEventId);
    });
  });
  src.onopen = function () { if (state) { state.textContent = "(live)"; } };
  src.onerror = function () { if (state) { state.textContent = "(reconnecting…)"; } };
}());
