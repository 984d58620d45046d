// Live parts of the Lexicon UI: a job's state and transcript, streamed as Server-Sent Events. Every
// page works without this script; the job page has a refresh link for browsers without it.
(function () {
  "use strict";
  function start() {
    var el = document.querySelector("[data-live]");
    if (!el || !window.EventSource) { return; }
    var src = new EventSource(el.getAttribute("data-live"));
    src.addEventListener("job", function (ev) {
      var job = JSON.parse(ev.data);
      el.textContent = job.transcript || "";
      var st = document.getElementById("job-state");
      if (st) { st.textContent = job.state; st.className = "state-" + job.state; }
      if (["completed", "failed", "refused", "lost", "cancelled"].indexOf(job.state) >= 0) {
        src.close();
        // The output, outcome and audit are rendered by the server: fetch the finished page.
        window.location.reload();
      }
    });
    // The session was signed out, revoked or expired: the page loaded again goes to sign-in.
    src.addEventListener("ended", function () {
      src.close();
      window.location.reload();
    });
    // A stream that broke (a replica restarted, a proxy cut it) is not retried here: the page is
    // loaded again a little later, which either shows the finished job or starts a new stream.
    src.addEventListener("error", function () {
      src.close();
      window.setTimeout(function () { window.location.reload(); }, 2000);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
