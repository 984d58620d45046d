// audit.mjs runs Lighthouse on pages of the web UI in one Chromium and prints one JSON line per page:
// its scores (0..1 by category) and the audits that did not pass in the asserted categories, so the
// browser test (plane/internal/e2e TestWebUI) can assert and print them.
//
//   node audit.mjs --chrome /usr/bin/chromium [--cookie 'name=value'] URL...
//
// Lighthouse's default form factor is a phone (412 px wide, touch): the width the UI must work at.
// The plane's certificate is its own CA's, which the throwaway profile does not hold, so certificate
// errors are ignored; the browser only talks to the plane on loopback.
import lighthouse from "lighthouse";
import * as chromeLauncher from "chrome-launcher";

const args = process.argv.slice(2);
let chromePath = "";
let cookie = "";
const urls = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--chrome") chromePath = args[++i];
  else if (args[i] === "--cookie") cookie = args[++i];
  else urls.push(args[i]);
}
if (!chromePath || urls.length === 0) {
  console.error("usage: node audit.mjs --chrome PATH [--cookie NAME=VALUE] URL...");
  process.exit(2);
}

// Performance is left out: under a loaded CI machine it measures the machine, and its trace doubles
// the run. Accessibility and best practices do not depend on speed.
const categories = ["accessibility", "best-practices"];
const asserted = new Set(["accessibility", "best-practices"]);

const chrome = await chromeLauncher.launch({
  chromePath,
  chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = false;
try {
  for (const url of urls) {
    const flags = { port: chrome.port, output: "json", logLevel: "error", onlyCategories: categories };
    if (cookie) flags.extraHeaders = { Cookie: cookie };
    const result = await lighthouse(url, flags);
    const lhr = result.lhr;
    const scores = {};
    const misses = [];
    for (const [id, cat] of Object.entries(lhr.categories)) {
      scores[id] = cat.score;
      if (!asserted.has(id)) continue;
      for (const ref of cat.auditRefs) {
        const a = lhr.audits[ref.id];
        if (ref.weight > 0 && a.score !== null && a.score < 1) {
          const items = (a.details && a.details.items ? a.details.items : []).slice(0, 5).map((it) =>
            it.node ? (it.node.selector || "") + " " + (it.node.explanation || "").split("\n")[0] : JSON.stringify(it).slice(0, 200));
          misses.push({ category: id, id: ref.id, title: a.title, score: a.score, items });
        }
      }
    }
    if (lhr.runtimeError) {
      failed = true;
      misses.push({ category: "runtime", id: lhr.runtimeError.code, title: lhr.runtimeError.message, score: 0, items: [] });
    }
    console.log(JSON.stringify({ url: lhr.finalDisplayedUrl || url, scores, misses }));
  }
} finally {
  await chrome.kill();
}
process.exit(failed ? 1 : 0);
