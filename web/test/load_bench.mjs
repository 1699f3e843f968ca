// Times the dashboard's first load in Debian's chromium: a fresh page (no
// cache) of a tab signed in with TOKEN (sessionStorage as after sign-in),
// from navigation until PAGE has rendered its data; RUNS times; prints the
// median. Used by bench/metrics_bench.sh.
//
//   node web/test/load_bench.mjs URL TOKEN [PAGE=overview] [RUNS=5]
import { chromium } from "playwright-core";

const [url, token, pageName = "overview", runs = "5"] = process.argv.slice(2);
const ready = {
  overview: '[data-card="free"]',
  queues: "tr[data-cq]",
  nodes: "tr[data-node]",
  workloads: "#workloads tr[data-workload]",
}[pageName];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                        args: ["--no-sandbox", "--disable-gpu"] });
// The browser's own share: a fresh context loading a trivial page.
const base = [];
for (let i = 0; i < Number(runs); i++) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const t0 = Date.now();
  await page.goto(`${url}/version`);
  base.push(Date.now() - t0);
  await ctx.close();
}
base.sort((a, b) => a - b);
const me = await (await fetch(url + "/api/v1/whoami", { headers: { Authorization: "Bearer " + token } })).json();
const times = [];
for (let i = 0; i < Number(runs); i++) {
  const ctx = await browser.newContext();
  // Signed in, as a reload finds the tab: the token and who it is.
  await ctx.addInitScript(([t, m]) => {
    sessionStorage.setItem("allot.token", t);
    sessionStorage.setItem("allot.me", m);
  }, [token, JSON.stringify(me)]);
  const page = await ctx.newPage();
  const t0 = Date.now();
  if (process.env.TRACE) {
    page.on("requestfinished", (r) => console.error(`  +${Date.now() - t0} ms ${r.url().replace(url, "")}`));
  }
  await page.goto(`${url}/#/${pageName}`);
  await page.waitForSelector(`main[data-page="${pageName}"] ${ready}`, { timeout: 60000 });
  times.push(Date.now() - t0);
  await ctx.close();
}
await browser.close();
times.sort((a, b) => a - b);
console.log(`dashboard ${pageName} first load: median ${times[times.length >> 1]} ms, ` +
            `min ${times[0]} ms, max ${times[times.length - 1]} ms over ${times.length} runs ` +
            `(a trivial page: median ${base[base.length >> 1]} ms)`);
