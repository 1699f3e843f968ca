// The dashboard in a real browser (Debian's chromium through playwright-core)
// against a live `allot up`: sign in, see a workload submitted through the
// CLI appear and run, open a node's GPUs (simulated, marked so), park and
// resume a workload, an autoscaled pool (local provider) boot a node for
// work that waits and show it, and a tenant's member not seeing another
// tenant's workloads, and a notebook created from its form, opened and
// running a cell. Screenshots go to
// OUTDIR (test artifacts; docs/dashboard.png in the README is one).
//
//   node web/test/dashboard.mjs ALLOT_BIN OUTDIR
import { spawn, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [allot, outdir] = process.argv.slice(2);
if (!allot || !outdir) {
  console.error("usage: node dashboard.mjs ALLOT_BIN OUTDIR");
  process.exit(2);
}
mkdirSync(outdir, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), "allot-ui-"));
chmodSync(dir, 0o711);  // The tenants' ids reach their homes under it (a notebook's $HOME).
const fail = (msg) => { throw new Error(msg); };

// `allot up` on a free port, 8 simulated GPUs.
const up = spawn(allot, ["up", "--listen", "127.0.0.1:0", "--data-dir", dir,
                         "--simulate-gpus", "8xH100-80GB"], { stdio: ["ignore", "pipe", "pipe"] });
let out = "";
up.stdout.on("data", (d) => { out += d; });
up.stderr.on("data", (d) => { out += d; });
let browser;
try {
  let url, admin;
  // Generous waits throughout: CI runs this beside the ASan build's tests
  // on 2 cores, where a step can take many times what it takes alone.
  for (let i = 0; i < 600 && !(url && admin); i++) {
    url = out.match(/the API is at (http:\/\/[0-9.:]+)/)?.[1];
    admin = out.match(/admin token (allot_[0-9a-f]+)/)?.[1];
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!url || !admin) fail("allot up did not start:\n" + out);
  const call = async (method, path, body, token = admin) => {
    const r = await fetch(url + path, { method, body,
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/yaml" } });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) fail(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
    return j;
  };
  await call("POST", "/api/v1/apply", `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec: {price: {nvidia.com/gpu: 2.5}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: shared}
spec:
  cohort: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: shared}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-b}
spec: {clusterQueue: shared}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: burst}
spec: {nodeLabels: {allot.dev/pool: burst}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: burst}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: burst
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: burst, namespace: team-a}
spec: {clusterQueue: burst}
---
apiVersion: allot.dev/v1
kind: NodePool
metadata: {name: burst}
spec:
  maxNodes: 2
  gpus: 4
  product: A100-80GB
  labels: {allot.dev/pool: burst}
  provider: {type: local}
  location: cloud
  pricePerNodeHour: "12.5"
`);
  const member = (await call("POST", "/api/v1/tokens",
    JSON.stringify({ user: "bob", role: "member", tenant: "team-b" }))).token;

  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                    args: ["--no-sandbox", "--disable-gpu"], timeout: 90000 });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(60000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));

  // Sign in as the admin.
  await page.goto(url + "/");
  await page.fill("#token", admin);
  await page.click("#signin button");
  await page.waitForSelector('main[data-page="overview"] [data-card="free"]');
  const free = await page.textContent('[data-card="free"] .n');
  if (free.trim() !== "8") fail("overview shows " + free + " free GPUs, want 8");
  await page.waitForSelector("#live.on");

  // A workload submitted through the CLI appears and runs (live, no reload).
  await page.goto(url + "/#/workloads");
  await page.waitForSelector("#workloads");
  execFileSync(allot, ["submit", "--server", url, "--token", admin, "-t", "team-a", "-q", "q",
                       "--name", "train", "--gpus", "2", "--image", "registry.example/train:1",
                       "--", "sh", "-c",
                       "echo hello-from-train; sleep 300"]);
  await page.waitForSelector('tr[data-workload="team-a/train"] td[data-state="Running"]',
                             { timeout: 60000 });
  // Its log, through the server from the agent.
  await page.click('tr[data-workload="team-a/train"]');
  await page.waitForFunction(() => document.querySelector("#log")?.textContent.includes("hello-from-train"),
                             null, { timeout: 60000 });
  // Its image (allot up runs it on the host: --ignore-images).
  const imgs = await page.textContent("#images");
  if (!imgs.includes("main: registry.example/train:1")) fail("the workload's detail shows image " + imgs);
  await page.screenshot({ path: join(outdir, "workloads.png") });
  execFileSync(allot, ["submit", "--server", url, "--token", admin, "-t", "team-b", "-q", "q",
                       "--name", "eval", "--gpus", "1", "--", "sleep", "300"]);
  await page.waitForSelector('tr[data-workload="team-b/eval"]', { timeout: 60000 });
  // One that cannot fit: the list says why it waits and where it is in
  // line, and its detail says so too, not "has no pods".
  execFileSync(allot, ["submit", "--server", url, "--token", admin, "-t", "team-b", "-q", "q",
                       "--name", "wide", "--gpus", "6", "--", "sleep", "300"]);
  await page.waitForSelector('tr[data-workload="team-b/wide"]', { timeout: 60000 });
  const why = await page.textContent('tr[data-workload="team-b/wide"] td:nth-child(4)');
  if (!why.includes("needs 6 nvidia.com/gpu") || !why.includes("1st in queue · ClusterQueue shared")) fail("the pending row's why column shows " + JSON.stringify(why));
  await page.click('tr[data-workload="team-b/wide"]');
  await page.waitForSelector("#pending");
  const detail = await page.textContent("#pending");
  if (!detail.includes("#1 in ClusterQueue shared") || !detail.includes("nvidia.com/gpu: 6") ||
      detail.includes("has no pods")) fail("the pending workload's detail shows " + detail);
  await page.screenshot({ path: join(outdir, "pending.png") });

  // The overview counts the allocated GPUs.
  await page.goto(url + "/#/overview");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="allocated"] .n')?.textContent.trim() === "3", null,
    { timeout: 60000 });
  await page.screenshot({ path: join(outdir, "overview.png") });

  // Queues: the ClusterQueue's usage against its quota.
  await page.goto(url + "/#/queues");
  await page.waitForSelector('tr[data-cq="shared"]');
  const q = await page.textContent('tr[data-cq="shared"]');
  if (!q.includes("3 / 8")) fail("queues page shows " + q);
  // Its cohort: what the cohort holds and what its ClusterQueues draw.
  const c = await page.textContent('tr[data-cohort="lab"]');
  if (!c.includes("3 / 8")) fail("queues page shows cohort " + c);
  await page.screenshot({ path: join(outdir, "queues.png") });

  // Nodes: open the node's GPUs; simulated ones say so; the held ones name
  // their workload.
  await page.goto(url + "/#/nodes");
  await page.waitForSelector("tr[data-node] td.ready");
  const ready = await page.textContent("tr[data-node] td.ready");
  if (ready !== "Ready") fail("the node list shows readiness " + ready);
  await page.click("tr[data-node]");
  await page.waitForSelector("#gpus tr[data-gpu]");
  const readiness = await page.textContent("#readiness");
  if (!readiness.startsWith("Ready") || !readiness.includes("last heartbeat")) fail("the node page shows readiness " + readiness);
  const rows = await page.$$("#gpus tr[data-gpu]");
  if (rows.length !== 8) fail(`the node shows ${rows.length} GPUs, want 8`);
  const gpus = await page.textContent("#gpus");
  if (!gpus.includes("simulated")) fail("simulated GPUs are not marked");
  if ((gpus.match(/team-a\/train/g) || []).length !== 2) fail("the node's GPUs do not name team-a/train twice");
  if (!/\d+ °C/.test(gpus)) fail("the node's GPUs show no temperature: " + gpus);
  await page.screenshot({ path: join(outdir, "node.png"), fullPage: true });

  // Park a running workload from its detail: its GPU goes back, its quota
  // stays (team-b/wide still waits for it), the list says why; then resume.
  await page.goto(url + "/#/workloads");
  await page.waitForSelector('tr[data-workload="team-b/eval"] td[data-state="Running"]');
  await page.click('tr[data-workload="team-b/eval"]');
  await page.waitForSelector('#park[data-verb="park"]');
  await page.click("#park");
  await page.waitForSelector('tr[data-workload="team-b/eval"] td[data-state="Parked"]', { timeout: 60000 });
  const parkedWhy = await page.textContent('tr[data-workload="team-b/eval"] td:nth-child(4)');
  if (!parkedWhy.includes("parked by ") || !parkedWhy.includes("its quota in ClusterQueue shared is kept")) {
    fail("the parked row's why column shows " + JSON.stringify(parkedWhy));
  }
  if (await page.textContent('tr[data-workload="team-b/wide"] td[data-state]') !== "Pending") {
    fail("the parked workload's quota went to team-b/wide");
  }
  await page.screenshot({ path: join(outdir, "parked.png") });
  await page.click('tr[data-workload="team-b/eval"]');
  await page.waitForSelector('#park[data-verb="resume"]');
  await page.click("#park");
  await page.waitForSelector('tr[data-workload="team-b/eval"] td[data-state="Running"]', { timeout: 60000 });

  // Pools: work that waits for the burst pool boots one of its nodes (an
  // agent the server starts); the page shows it ready and why it booted.
  await page.goto(url + "/#/pools");
  await page.waitForSelector('tr[data-pool="burst"]');
  execFileSync(allot, ["submit", "--server", url, "--token", admin, "-t", "team-a", "-q", "burst",
                       "--name", "burst-job", "--gpus", "4", "--", "sleep", "300"]);
  await page.waitForFunction(() =>
    document.querySelector('tr[data-pool="burst"] td[data-state="ready"]')?.textContent.trim().startsWith("1"),
    null, { timeout: 90000 });
  const decisions = await page.textContent('[data-pool-decisions="burst"]');
  if (!decisions.includes("resume") || !decisions.includes("burst-0")) fail("the pool's decisions show " + decisions);
  const poolRow = await page.textContent('tr[data-pool="burst"]');
  if (!poolRow.includes("simulated GPUs") || !poolRow.includes("12.5")) fail("the pool row shows " + poolRow);
  if (!(await page.$("#pool-chart-burst canvas"))) fail("the pool has no chart");
  await page.screenshot({ path: join(outdir, "pools.png"), fullPage: true });

  // A tenant's member sees its own workloads only.
  await page.click("#signout");
  await page.fill("#token", member);
  await page.click("#signin button");
  await page.waitForSelector('main[data-page="overview"]');
  await page.goto(url + "/#/workloads");
  await page.waitForSelector('tr[data-workload="team-b/eval"]');
  if (await page.$('tr[data-workload="team-a/train"]')) fail("team-b's member sees team-a's workload");
  await page.screenshot({ path: join(outdir, "tenant-view.png") });

  // A notebook from the dashboard (docs/notebooks.md): the form creates it,
  // its tab waits on the server's page until it runs, then Jupyter opens
  // through the proxy (signed in by the one-time link's cookie) and a cell
  // runs in its kernel.
  await page.goto(url + "/#/notebooks");
  await page.waitForSelector("#new-notebook");
  await page.fill("#nb-name", "nb");
  await page.selectOption("#nb-queue", "team-b/q");
  await page.fill("#nb-gpus", "1");
  const [tab] = await Promise.all([page.context().waitForEvent("page"), page.click("#nb-create")]);
  tab.setDefaultTimeout(90000);
  tab.on("pageerror", (e) => console.log("notebook tab (Jupyter's page): " + e.message));
  await tab.waitForURL(/\/notebooks\/team-b\/nb\/tree$/);
  await tab.waitForSelector("#notebook_list");  // Jupyter's file list, after the waiting page.
  await tab.screenshot({ path: join(outdir, "notebook-tree.png") });
  const created = await tab.evaluate(async () => {
    const r = await fetch("api/contents", { method: "POST", body: JSON.stringify({ type: "notebook" }) });
    return (await r.json()).path;
  });
  await tab.goto(url + "/notebooks/team-b/nb/notebooks/" + created);
  await tab.waitForFunction(() => window.Jupyter?.notebook?.kernel?.is_connected());
  await tab.evaluate(() => {
    const cell = window.Jupyter.notebook.get_cell(0);
    cell.set_text("print(6 * 7)");
    cell.execute();
  });
  await tab.waitForFunction(() => document.querySelector(".output_area pre")?.textContent.includes("42"));
  await tab.screenshot({ path: join(outdir, "notebook.png") });
  await page.goto(url + "/#/notebooks");
  await page.waitForSelector('tr[data-notebook="team-b/nb"] td[data-state="Running"]');
  const idle = await page.textContent('tr[data-notebook="team-b/nb"] td.idle');
  if (!/parks in|in use/.test(idle)) fail("the notebook's idle parking shows " + idle);
  await page.screenshot({ path: join(outdir, "notebooks.png") });
  if (errors.length) fail("page errors: " + errors.join("; "));
  console.log("dashboard test passed; screenshots in " + outdir);
} catch (e) {
  console.error("FAIL: " + e.message);
  // What every open page showed at the failure.
  for (const [i, p] of (browser?.contexts().flatMap((c) => c.pages()) || []).entries()) {
    try {
      await p.screenshot({ path: join(outdir, `failure-${i}.png`) });
      console.error(`page ${i} (${p.url()}): ${(await p.textContent("body")).slice(0, 500)}`);
    } catch (_) {}
  }
  try { writeFileSync(join(outdir, "allot-up.log"), out); } catch (_) {}
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  up.kill("SIGINT");
  await new Promise((r) => up.on("exit", r));
  // The local pool's agents outlive their server: stop them.
  const pids = (d, pools) => readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? pids(join(d, e.name), pools || e.name.endsWith(".pools"))
      : pools && e.name.endsWith(".pid") ? [readFileSync(join(d, e.name), "utf8")] : []);
  for (const pid of pids(dir, false)) { try { process.kill(Number(pid), "SIGKILL"); } catch (_) {} }
  rmSync(dir, { recursive: true, force: true });
}
