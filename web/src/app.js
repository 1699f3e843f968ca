// Allot's dashboard: a small single-page app over the HTTP API (no build
// step; uPlot for charts). The token stays in this tab's sessionStorage and
// goes as a bearer token with every call, so a tenant's users see exactly
// what the API lets them see. Live: a watch stream on workloads re-renders
// the page when anything changes.
"use strict";

const $ = (s, el = document) => el.querySelector(s);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) =>
  ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const fmt = (n, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "-");
let token = sessionStorage.getItem("allot.token") || "";
// Who the token is, kept with it so a reload does not wait for whoami
// (checked again in the background; a revoked token signs out).
let me = JSON.parse(sessionStorage.getItem("allot.me") || "null");
let watchAbort = null;
let renderTimer = null;
// Long tables show their first kMaxRows rows (a first load stays fast on a
// large cluster); "show all" (?all=1) or a filter shows the rest.
const kMaxRows = 200;
// This page with ?all=1: the "show all" link.
function showAllHref() {
  return location.hash.includes("?") ? location.hash + "&all=1" : location.hash + "?all=1";
}
function capped(list, params, what) {
  if (params.get("all") === "1" || list.length <= kMaxRows) return { rows: list, note: "" };
  return { rows: list.slice(0, kMaxRows),
           note: `<p class="muted" id="capped">Showing ${kMaxRows} of ${list.length} ${what}. <a href="${esc(showAllHref())}">Show all</a></p>` };
}
// The same, paged by the server: only the first kMaxRows items are fetched.
async function listed(path, params, what) {
  if (params.get("all") === "1") return { rows: (await api(path)).items, note: "" };
  const r = await api(path + (path.includes("?") ? "&" : "?") + "limit=" + kMaxRows);
  return { rows: r.items,
           note: r.continue === undefined ? "" : `<p class="muted" id="capped">Showing the first ${kMaxRows} ${what}. <a href="${esc(showAllHref())}">Show all</a></p>` };
}

async function api(path, method = "GET") {
  const r = await fetch(path, { method, headers: { Authorization: "Bearer " + token } });
  if (r.status === 401) { signOut(); throw new Error("signed out"); }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body?.error?.message || r.status + " " + path);
  return body;
}

function setStatus(s) { $("#status").textContent = s; }
function signOut() {
  token = ""; me = null;
  sessionStorage.removeItem("allot.token");
  sessionStorage.removeItem("allot.me");
  if (watchAbort) watchAbort.abort();
  location.hash = "#/signin";
  route();
}

// ---- live updates: GET /api/v1/workloads?watch=1 (newline-delimited JSON)
async function watch() {
  if (watchAbort) watchAbort.abort();
  watchAbort = new AbortController();
  try {
    // From the current resource version: changes only, not a snapshot of
    // every workload (which would re-render the page for nothing).
    const rv = (await api("/api/v1/workloads?limit=1")).resourceVersion;
    const r = await fetch("/api/v1/workloads?watch=1&resourceVersion=" + encodeURIComponent(rv), {
      headers: { Authorization: "Bearer " + token }, signal: watchAbort.signal });
    $("#live").classList.add("on");
    const reader = r.body.getReader();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      clearTimeout(renderTimer);
      renderTimer = setTimeout(route, 300);
    }
  } catch (e) { /* aborted or dropped */ }
  $("#live").classList.remove("on");
  if (token && !watchAbort.signal.aborted) setTimeout(watch, 2000);
}

// ---- pages ------------------------------------------------------------------
function signInPage(main, error) {
  main.innerHTML = `<form class="signin" id="signin"><h2>Sign in</h2>
    <p>Paste an API token (<code>allot token create</code>; <code>allot up</code> prints the admin's).</p>
    <input id="token" type="password" placeholder="allot_..." autocomplete="off">
    <button type="submit">Sign in</button><p class="err">${esc(error || "")}</p></form>`;
  $("#signin").onsubmit = async (e) => {
    e.preventDefault();
    token = $("#token").value.trim();
    try {
      me = await api("/api/v1/whoami");
      sessionStorage.setItem("allot.token", token);
      sessionStorage.setItem("allot.me", JSON.stringify(me));
      location.hash = "#/overview";
      watch();
    } catch (err) { token = ""; signInPage(main, "that token does not sign in: " + err.message); }
  };
}

// Device UUID -> "tenant/name" of the admitted workload holding it; MIG
// slices count for their GPU.
function holders(workloads, nodes) {
  const parent = {};
  for (const n of nodes) for (const g of n.status?.gpus || []) {
    for (const m of g.mig || []) parent[m.uuid] = g.uuid;
  }
  const held = {};
  for (const w of workloads) {
    const st = w.status || {};
    if (!st.admission || ["Succeeded", "Failed"].includes(st.state)) continue;
    for (const psa of st.admission.podSetAssignments || []) {
      for (const pl of psa.placements || []) for (const u of pl.gpus || []) {
        held[parent[u] || u] = w.metadata.namespace + "/" + w.metadata.name;
      }
    }
  }
  return held;
}

async function overviewPage(main) {
  // One summary from the server: GPU states by flavor and location, the
  // workloads this token may see by state, and this month's cost.
  const o = await api("/api/v1/overview");
  const g = o.gpus, wl = o.workloads || {};
  const count = (states) => states.reduce((n, s) => n + (wl[s] || 0), 0);
  const card = (n, l, id) => `<div class="card" data-card="${id}"><div class="n">${n}</div><div class="l">${l}</div></div>`;
  main.innerHTML = `<h2>Overview</h2><div class="cards">
    ${card(g.free, "GPUs free", "free")}${card(g.allocated, "GPUs allocated", "allocated")}
    ${card(g.idle, `held but idle (&lt;${o.idleUtilPct} %, ${o.idleMinutes} min)`, "idle")}${card(g.unhealthy, "unhealthy", "unhealthy")}
    ${card(count(["Pending", "Requeued"]), "workloads pending", "pending")}
    ${card(count(["Admitted", "Running"]), "admitted or running", "admitted")}
    ${card(count(["Parked"]), "parked (GPUs given back, quota kept)", "parked")}
    ${card(o.thisMonth ? fmt(o.thisMonth.total.cost, 2) : "-", "cost this month", "cost")}</div>
    ${g.simulated ? `<p><span class="sim">simulated</span> ${g.simulated} of these GPUs are simulated (<code>--simulate-gpus</code>).</p>` : ""}
    <table><tr><th>Flavor · location</th><th>free</th><th>allocated</th><th>held but idle</th><th>unhealthy</th></tr>
    ${o.byFlavorAndLocation.map((r) => `<tr><td>${esc(r.flavor + " · " + r.location)}</td><td>${r.free}</td><td>${r.allocated}</td><td>${r.idle}</td><td>${r.unhealthy}</td></tr>`).join("")}</table>`;
}

function bar(used, nominal) {
  const pct = nominal > 0 ? Math.min(100, (100 * used) / nominal) : used > 0 ? 100 : 0;
  return `<div class="bar" title="${used} of ${nominal}"><span class="${used > nominal ? "over" : ""}" style="width:${pct}%"></span></div>`;
}

// One line of a quota cell: "h100 nvidia.com/gpu: 6 / 8 (borrowed 2)" and a bar.
function quotaLine(flavor, r) {
  const used = parseFloat(r.total), nom = parseFloat(r.nominalQuota), b = parseFloat(r.borrowed);
  const lent = parseFloat(r.lent || "0");
  // Parking (docs/parking.md): the part of the usage parked workloads hold,
  // and what runs on parked capacity without quota.
  const parked = parseFloat(r.parked || "0"), onParked = parseFloat(r.onParkedCapacity || "0");
  const note = [b > 0 ? `borrowed ${b}` : "", lent > 0 ? `lent ${+lent.toFixed(2)}` : "",
    parked > 0 ? `parked ${parked}` : "", onParked > 0 ? `+${onParked} on parked capacity` : ""]
    .filter(Boolean).join(", ");
  return `<div>${esc(flavor)} ${esc(r.name)}: ${used} / ${nom}${note ? ` <span class="muted">(${note})</span>` : ""}${bar(used, nom)}</div>`;
}

async function queuesPage(main, params) {
  const [{ rows, note }, overview] = await Promise.all([
    listed("/api/v1/clusterqueues", params, "ClusterQueues"), api("/api/v1/overview")]);
  const body = rows.map((cq) => {
    const st = cq.status || {};
    const res = (st.flavorsUsage || []).flatMap((f) => f.resources.map((r) => quotaLine(f.name, r))).join("");
    return `<tr data-cq="${esc(cq.metadata.name)}"><td>${esc(cq.metadata.name)}</td><td>${esc(cq.spec?.cohortName || cq.spec?.cohort || "")}</td>
      <td>${res}</td><td>${st.pendingWorkloads ?? 0}</td><td>${st.admittedWorkloads ?? 0}</td>
      <td>${st.fairSharing?.weightedShare ?? 0}</td></tr>`;
  }).join("");
  const cohorts = (overview.cohorts || []).map((c) => `<tr data-cohort="${esc(c.name)}"><td>${esc(c.name)}</td>
    <td>${esc(c.parent)}</td><td>${c.resources.map((r) => quotaLine(r.flavor, r)).join("")}</td></tr>`).join("");
  main.innerHTML = `<h2>Queues</h2><table><tr><th>ClusterQueue</th><th>cohort</th><th>usage / nominal quota</th>
    <th>pending</th><th>admitted</th><th>weighted share</th></tr>${body}</table>${note}
    ${cohorts ? `<h3>Cohorts</h3><p class="muted">What each cohort holds (its own quota and what its
    ClusterQueues may lend it) and what they draw from it.</p><table><tr><th>cohort</th><th>parent</th>
    <th>usage / quota</th></tr>${cohorts}</table>` : ""}`;
}

function chart(el, title, xs, series, unit) {
  el.innerHTML = "";
  if (!window.uPlot || !xs.length) { el.innerHTML = `<p class="muted">${esc(title)}: no data yet.</p>`; return; }
  const colors = ["#3b6fd8", "#d88a3b", "#2a9d4b", "#b3261e", "#7a4bd8", "#1aa3a3", "#999"];
  new uPlot({ title, width: Math.min(1200, el.clientWidth || 900), height: 220,
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length],
      value: (u, v) => (v == null ? "-" : fmt(v, 1) + " " + unit) }))],
    axes: [{}, { label: unit }] }, [xs, ...series.map((s) => s.data)], el);
}

async function tenantsPage(main) {
  const day = 86400000, now = Date.now(), start = now - 7 * day;
  const days = [...Array(7).keys()].map((i) => start + i * day);
  const perDay = await Promise.all(days.map((d) =>
    api(`/api/v1/usage?by=tenant&sinceUnixMs=${Math.floor(d)}&untilUnixMs=${Math.floor(Math.min(d + day, now))}`)));
  const tenants = [...new Set(perDay.flatMap((r) => r.items.map((i) => i.key)))].sort();
  const top = await api(`/api/v1/usage?by=workload&sinceUnixMs=${Math.floor(start)}`);
  main.innerHTML = `<h2>Tenants</h2><div class="chart" id="usage-chart"></div>
    <table><tr><th>tenant</th><th>GPU-hours (7 days)</th><th>utilization</th><th>cost</th><th title="GPU-hours of quota held by parked workloads: reserved, not charged">reserved while parked</th></tr>
    ${tenants.map((t) => {
      const s = perDay.flatMap((r) => r.items.filter((i) => i.key === t));
      const g = s.reduce((a, i) => a + i.gpuHours, 0), c = s.reduce((a, i) => a + i.cost, 0);
      const res = s.reduce((a, i) => a + (i.reservedGpuHours ?? 0), 0);
      const u = s.reduce((a, i) => a + i.utilGpuMs, 0) / Math.max(1, s.reduce((a, i) => a + i.gpuMs, 0));
      return `<tr data-tenant="${esc(t)}"><td>${esc(t)}</td><td>${fmt(g, 3)}</td><td>${fmt(100 * u)} %</td><td>${fmt(c, 2)}</td><td>${fmt(res, 3)} GPU-h</td></tr>`;
    }).join("")}</table>
    <h2>Top workloads (7 days, by cost)</h2><table><tr><th>workload</th><th>GPU-hours</th><th>utilization</th><th>cost</th></tr>
    ${top.items.sort((a, b) => b.costMicros - a.costMicros || b.gpuMs - a.gpuMs).slice(0, 10).map((i) =>
      `<tr><td>${esc(i.key)}</td><td>${fmt(i.gpuHours, 3)}</td><td>${fmt(i.utilizationPct)} %</td><td>${fmt(i.cost, 2)}</td></tr>`).join("")}</table>`;
  chart($("#usage-chart"), "GPU-hours per day", days.map((d) => d / 1000),
    tenants.map((t) => ({ label: t, data: perDay.map((r) => r.items.find((i) => i.key === t)?.gpuHours ?? 0) })), "GPU-h");
}

// A node's Ready condition: ["Ready" | "NotReady" | "Unknown", its message].
function readiness(n) {
  const c = (n.status?.conditions || []).find((c) => c.type === "Ready");
  if (!c) return ["Unknown", ""];
  return [c.status === "True" ? "Ready" : c.status === "False" ? "NotReady" : "Unknown", c.message || ""];
}

async function nodesPage(main, params) {
  const { rows, note } = await listed("/api/v1/nodes", params, "nodes");
  main.innerHTML = `<h2>Nodes &amp; GPUs</h2><table><tr><th>node</th><th>ready</th><th>location</th><th>GPUs</th><th>in use</th><th>health</th><th></th></tr>
    ${rows.map((n) => {
      const gpus = n.status?.gpus || [], labels = n.metadata.labels || {};
      const sick = gpus.filter((g) => g.health && g.health !== "Healthy").length;
      const [ready, why] = readiness(n);
      return `<tr class="click" data-node="${esc(n.metadata.name)}"><td>${esc(n.metadata.name)}</td>
        <td class="ready ${ready === "Ready" ? "ok" : "bad"}" title="${esc(why)}">${ready}</td>
        <td>${esc(labels["allot.dev/location"] || "onprem")}</td>
        <td>${gpus.length} × ${esc(gpus[0]?.product || "-")}</td><td>${n.status?.allocatedGpus ?? 0}</td>
        <td>${sick ? `<span class="bad">${sick} unhealthy</span>` : `<span class="ok">healthy</span>`}${n.spec?.unschedulable ? " · cordoned" : ""}</td>
        <td>${labels["allot.dev/simulated"] === "true" ? '<span class="sim">simulated</span>' : ""}</td></tr>`;
    }).join("")}</table>${note}`;
  main.querySelectorAll("tr[data-node]").forEach((tr) => {
    tr.onclick = () => { location.hash = "#/nodes/" + encodeURIComponent(tr.dataset.node); };
  });
}

async function nodePage(main, name) {
  const [node, wls, tel] = await Promise.all([api("/api/v1/nodes/" + encodeURIComponent(name)),
    api("/api/v1/workloads"), api("/api/v1/telemetry?node=" + encodeURIComponent(name))]);
  const held = holders(wls.items, [node]);
  const sim = (node.metadata.labels || {})["allot.dev/simulated"] === "true";
  const last = { ...(tel.latest || {}) };  // Newest sample; else the last minute.
  for (const it of tel.items) if (it.points.length && !last[it.uuid]) last[it.uuid] = it.points[it.points.length - 1];
  const [ready, why] = readiness(node);
  const beat = (node.status?.conditions || []).find((c) => c.type === "Ready")?.lastHeartbeatTime;
  main.innerHTML = `<h2>Node ${esc(name)} ${sim ? '<span class="sim">simulated GPUs</span>' : ""}</h2>
    <p id="readiness"><span class="${ready === "Ready" ? "ok" : "bad"}">${ready}</span> ${esc(why)}${beat ? ` · last heartbeat ${esc(beat)}` : ""}</p>
    <table id="gpus"><tr><th>GPU</th><th>model</th><th>memory</th><th>health</th><th>held by</th>
      <th>util</th><th>temp</th><th>power</th><th>memory used</th></tr>
    ${(node.status?.gpus || []).map((g) => { const p = last[g.uuid];
      return `<tr data-gpu="${esc(g.uuid)}"><td>${esc(g.uuid)}${sim ? ' <span class="sim">simulated</span>' : ""}</td><td>${esc(g.product)}</td>
      <td>${esc(g.memory)}</td><td class="${g.health === "Healthy" || !g.health ? "ok" : "bad"}">${esc(g.health || "Healthy")}</td>
      <td>${esc(held[g.uuid] || "")}</td><td>${p ? p[1] + " %" : "-"}</td><td>${p ? p[2] + " °C" : "-"}</td>
      <td>${p ? p[3] + " W" : "-"}</td><td>${p ? p[4] + " MiB" : "-"}</td></tr>`; }).join("")}</table>
    <div class="chart" id="util-chart"></div><div class="chart" id="temp-chart"></div>`;
  const xs = [...new Set(tel.items.flatMap((i) => i.points.map((p) => p[0])))].sort((a, b) => a - b);
  const series = (col) => tel.items.map((i) => {
    const at = new Map(i.points.map((p) => [p[0], p[col]]));
    return { label: i.uuid.slice(-8), data: xs.map((x) => at.get(x) ?? null) };
  });
  chart($("#util-chart"), "Utilization (1-minute averages, last hour)", xs.map((x) => x / 1000), series(1), "%");
  chart($("#temp-chart"), "Temperature", xs.map((x) => x / 1000), series(2), "°C");
}

// Autoscaled NodePools (docs/autoscaling.md): each pool's nodes by state,
// health, boot time and price, a chart of its nodes over time (the
// server's history since it started, last 24 h) and its last decisions.
async function poolsPage(main) {
  const pools = (await api("/api/v1/nodepools")).items;
  if (!pools.length) {
    main.innerHTML = `<h2>Pools</h2><p class="muted">No autoscaled NodePools: a NodePool with a provider
      boots nodes for work that waits and suspends idle ones (docs/autoscaling.md).</p>`;
    return;
  }
  const price = (p) => (p.spec.pricePerNodeHour && p.spec.pricePerNodeHour !== "0" ? p.spec.pricePerNodeHour + " /node-h" : "");
  main.innerHTML = `<h2>Pools</h2><table id="pools"><tr><th>pool</th><th>where</th><th>node</th>
    <th>ready</th><th>booting</th><th>suspending</th><th>min · max</th><th>median boot</th><th>health</th></tr>
    ${pools.map((p) => { const st = p.status || {}, n = st.nodes || {}, s = p.spec;
      const health = st.listing ? "asking its provider what runs"
        : st.degraded ? `<span class="bad">degraded</span> (${st.failuresInARow} failed boots in a row)`
        : `<span class="ok">ok</span>`;
      return `<tr data-pool="${esc(p.metadata.name)}"><td>${esc(p.metadata.name)}
        <div class="muted">${esc(s.provider?.type)}${s.provider?.type === "local" ? ' <span class="sim">simulated GPUs</span>' : ""}</div></td>
        <td>${esc(s.location)}${s.zone ? " · " + esc(s.zone) : ""}<div class="muted">${esc(price(p))}</div></td>
        <td>${s.gpus ?? 0} × ${esc(s.product || "GPU")}</td>
        <td data-state="ready">${n.ready ?? 0}${n.idle ? ` <span class="muted">(${n.idle} idle)</span>` : ""}</td>
        <td data-state="booting">${n.booting ?? 0}</td><td>${n.suspending ?? 0}</td>
        <td>${s.minNodes ?? 0} · ${s.maxNodes}</td>
        <td>${st.medianBootSeconds != null ? fmt(st.medianBootSeconds, 1) + " s" : "-"}</td>
        <td>${health}${st.lastError ? `<div class="muted" title="${esc(st.lastError)}">last error: ${esc(st.lastError.slice(0, 160))}</div>` : ""}</td></tr>`;
    }).join("")}</table>
    ${pools.map((p) => `<div class="chart" id="pool-chart-${esc(p.metadata.name)}"></div>
      <table class="decisions" data-pool-decisions="${esc(p.metadata.name)}"><tr><th colspan="4">${esc(p.metadata.name)}: last decisions</th></tr>
      ${(p.status?.decisions || []).slice(-10).reverse().map((d) => `<tr><td>${esc(new Date(d.time).toLocaleString())}</td>
        <td>${esc(d.action)}</td><td>${esc(d.nodes.join(", "))}</td><td>${esc(d.reason)}</td></tr>`).join("") ||
        '<tr><td class="muted" colspan="4">none yet</td></tr>'}</table>`).join("")}`;
  for (const p of pools) {
    // Step lines: each point holds until the next change, and until now.
    const pts = p.status?.history?.points || [];
    const now = Date.now();
    const xs = [], cols = [[], [], []];
    pts.forEach((pt, i) => {
      const next = i + 1 < pts.length ? pts[i + 1][0] : now;
      for (const t of [pt[0], Math.max(pt[0], next - 1)]) {
        xs.push(t / 1000);
        for (let c = 0; c < 3; c++) cols[c].push(pt[c + 1]);
      }
    });
    chart(document.getElementById("pool-chart-" + p.metadata.name), `${p.metadata.name}: nodes`, xs,
      [{ label: "ready", data: cols[1] }, { label: "booting", data: cols[0] }, { label: "suspending", data: cols[2] }],
      "nodes");
  }
}

// ---- notebooks (docs/notebooks.md): list, create from a form, open ----------
async function notebooksPage(main) {
  const all = (await api("/api/v1/workloads")).items.filter((w) => w.spec?.type === "notebook");
  const queues = (await api("/api/v1/localqueues")).items
    .filter((q) => !me.tenant || q.metadata.namespace === me.tenant);
  const gpus = (w) => {
    const req = w.spec?.podSets?.[0]?.template?.resources?.requests || {};
    const mig = Object.keys(req).find((k) => k.startsWith("nvidia.com/mig-"));
    return mig ? mig.slice(15) : req["nvidia.com/gpu"] ?? "0";
  };
  const ago = (ms) => { const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 120 ? `${s} s ago` : s < 7200 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`; };
  // The idle parker's clock: parked at parkAtUnixMs unless it is used first.
  // HTML: the last five minutes in red.
  const left = (st) => { if (!st.idleAfterSeconds) return "-";
    if (!st.parkAtUnixMs) return esc(`in use (parks after ${Math.round(st.idleAfterSeconds / 60)} min idle)`);
    const s = Math.max(0, Math.round((st.parkAtUnixMs - Date.now()) / 1000));
    const text = s < 120 ? `parks in ${s} s` : `parks in ${Math.round(s / 60)} min`;
    return s < 300 ? `<span class="bad">${text}</span>` : esc(text); };
  main.innerHTML = `<h2>Notebooks</h2>
    <table id="notebooks"><tr><th>notebook</th><th>state</th><th>GPUs</th><th>last activity</th>
      <th>idle parking</th><th></th></tr>
    ${all.map((w) => { const st = w.status || {}, key = w.metadata.namespace + "/" + w.metadata.name;
      return `<tr data-notebook="${esc(key)}"><td>${esc(key)}<div class="muted">${esc(w.spec.queueName)}</div></td>
        <td data-state="${esc(st.state)}">${esc(st.state)}<div class="muted">${esc(plainReason(w))}</div></td>
        <td>${esc(gpus(w))}</td><td>${st.lastActivityUnixMs ? esc(ago(st.lastActivityUnixMs)) : "-"}</td>
        <td class="idle">${left(st)}</td>
        <td><button class="open" data-key="${esc(key)}">Open</button></td></tr>`;
    }).join("") || '<tr><td colspan="6" class="muted">no notebooks yet</td></tr>'}</table>
    <form id="new-notebook" class="signin"><h2>New notebook</h2>
      <label>name <input id="nb-name" required pattern="[a-z0-9]([-a-z0-9]*[a-z0-9])?" placeholder="my-notebook"></label>
      <label>queue <select id="nb-queue">${queues.map((q) =>
        `<option value="${esc(q.metadata.namespace + "/" + q.metadata.name)}">${esc(q.metadata.namespace + "/" + q.metadata.name)}</option>`).join("")}</select></label>
      <label>GPUs <input id="nb-gpus" type="number" min="0" max="64" value="1"></label>
      <label>image <input id="nb-image" placeholder="empty: the node's jupyter-notebook"></label>
      <button id="nb-create">Create</button> <span id="nb-result" class="muted"></span></form>`;
  main.querySelectorAll("button.open").forEach((b) => { b.onclick = () => openNotebook(b.dataset.key); });
  $("#new-notebook").onsubmit = async (e) => {
    e.preventDefault();
    const [ns, queue] = $("#nb-queue").value.split("/");
    const image = $("#nb-image").value.trim();
    const doc = { apiVersion: "allot.dev/v1", kind: "Notebook",
      metadata: { name: $("#nb-name").value.trim(), namespace: ns },
      spec: { queueName: queue, gpus: Number($("#nb-gpus").value || 0), ...(image ? { image } : {}) } };
    const r = await fetch("/api/v1/apply", { method: "POST", body: JSON.stringify(doc),
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) { $("#nb-result").textContent = body?.error?.message || r.status; return; }
    openNotebook(ns + "/" + doc.metadata.name);
  };
}

// A sign-in link for this browser (a ticket the server trades for a cookie
// on the notebook's path), opened in a new tab: its page waits while the
// notebook queues or starts.
async function openNotebook(key) {
  // The tab first, while the click still counts as the user's (a window
  // opened after an await may be blocked as a pop-up).
  const tab = window.open("about:blank", "_blank");
  try {
    const r = await api(`/api/v1/workloads/${key}/open`, "POST");
    if (tab) tab.location = r.url; else location.href = r.url;
    setStatus(`${key}: ${r.state}; opened in a new tab`);
  } catch (e) { if (tab) tab.close(); setStatus(e.message); }
}

function plainReason(w) {
  const st = w.status || {};
  // The reason ends with its place in line ("; 2nd in queue").
  if (st.pendingReason) return st.pendingReason + (st.position ? ` · ClusterQueue ${st.clusterQueue}` : "");
  // Parked: since when and why (who asked), or why its resume waits.
  const parked = (st.conditions || []).find((c) => c.type === "Parked" && c.status === "True");
  if (st.state === "Parked" && parked) {
    return `${parked.message} (since ${new Date(parked.lastTransitionUnixMs).toLocaleString()})`;
  }
  const c = (st.conditions || []).find((c) => c.type === "Finished" || c.type === "Evicted" && c.status === "True");
  // detail: the message naming another tenant's workload (cluster-admins only).
  if (c) return c.detail || c.message || c.reason;
  if (st.onParkedCapacity) return "on parked capacity: the first to go when its parked owners resume";
  // Admitted, its pods still getting their images.
  const pull = (st.conditions || []).find((c) => c.type === "PodsReady" && c.status === "False");
  return pull ? pull.message || pull.reason : "";
}

// Each pod set's image (its compact template's, or its first container's)
// and how its pods' image pulls went.
function images(w) {
  const st = w.status || {};
  const list = (w.spec?.podSets || []).map((ps) => {
    const image = ps.template?.image || ps.template?.spec?.containers?.[0]?.image;
    return `${esc(ps.name || "main")}: ${image ? esc(image) : "(a process on the host)"}`;
  }).join(", ");
  // Bytes so far, of how many, as the agents last said.
  const size = (n) => n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
  const got = st.pullBytes ? `, ${size(st.pullBytes)}${st.pullTotalBytes
    ? ` of ${size(st.pullTotalBytes)} (${Math.floor(100 * st.pullBytes / st.pullTotalBytes)} %)` : ""}` : "";
  const pull = st.pullingSinceMs ? `pulling for ${Math.round((Date.now() - st.pullingSinceMs) / 1000)} s${got}`
    : st.pullMs ? `pulled in ${(st.pullMs / 1000).toFixed(1)} s` : "";
  return `<tr><th>image</th><td id="images">${list}${pull ? ` <span class="muted">· ${pull}</span>` : ""}</td></tr>`;
}

async function workloadsPage(main, params) {
  const q = params.get("q") || "", state = params.get("state") || "";
  const path = "/api/v1/workloads" + (state ? "?state=" + encodeURIComponent(state) : "");
  // The server filters by state and pages; a name filter needs every name.
  const { rows, note } = q
    ? capped((await api(path)).items.filter((w) => (w.metadata.namespace + "/" + w.metadata.name).includes(q)),
             params, "workloads")
    : await listed(path, params, "workloads");
  const states = ["Pending", "Admitted", "Running", "Parked", "Suspended", "Succeeded", "Failed", "Evicted",
                  "Requeued"];
  main.innerHTML = `<h2>Workloads</h2><div class="filters">
    <input id="q" placeholder="filter by tenant/name" value="${esc(q)}">
    <select id="state"><option value="">any state</option>${states.map((s) =>
      `<option ${s === state ? "selected" : ""}>${s}</option>`).join("")}</select></div>
    <table id="workloads"><tr><th>workload</th><th>queue</th><th>state</th><th>why / where</th></tr>
    ${rows.map((w) => { const st = w.status || {};
      const place = (st.admission?.podSetAssignments || []).flatMap((p) => (p.placements || []).map((pl) =>
        `${esc(pl.node)}: ${(pl.gpus || []).length} GPU`)).join(", ");
      return `<tr class="click" data-workload="${esc(w.metadata.namespace + "/" + w.metadata.name)}">
        <td>${esc(w.metadata.namespace)}/${esc(w.metadata.name)}</td><td>${esc(w.spec?.queueName)}</td>
        <td data-state="${esc(st.state)}">${esc(st.state)}</td><td>${esc(plainReason(w))}${place ? `<div class="muted">${place}</div>` : ""}</td></tr>`;
    }).join("")}</table>${note}<div id="detail"></div>`;
  const go = () => { location.hash = `#/workloads?q=${encodeURIComponent($("#q").value)}&state=${encodeURIComponent($("#state").value)}`; };
  $("#q").onchange = go; $("#state").onchange = go;
  main.querySelectorAll("tr[data-workload]").forEach((tr) => { tr.onclick = () => showWorkload(tr.dataset.workload); });
  if (openWorkload) readTail(openWorkload);
}

// The log's tail, read again every 3 s while it is shown (a live tail).
let tailTimer = null;
let openWorkload = "";  // Shown again after a live re-render.
async function showWorkload(key) {
  clearInterval(tailTimer);
  const d = $("#detail");
  d.innerHTML = `<h2>${esc(key)}</h2><p class="muted">loading the log…</p>`;
  await readTail(key);
  openWorkload = key;
  tailTimer = setInterval(() => {
    if ($("#main").dataset.page !== "workloads" || openWorkload !== key) return clearInterval(tailTimer);
    readTail(key);
  }, 3000);
}

// What a workload asks for: "2 × {nvidia.com/gpu: 4, cpu: 8}" per pod set.
function asks(w) {
  return (w.spec?.podSets || []).map((ps) => {
    const req = ps.template?.resources?.requests || ps.template?.spec?.containers?.[0]?.resources?.requests || {};
    return `${ps.count ?? 1} × {${Object.entries(req).map(([k, v]) => `${k}: ${v}`).join(", ")}}`;
  }).join(" + ");
}

// The Park / Resume button of a workload's detail (docs/parking.md).
function parkButton(key, verb) {
  $("#park").onclick = async () => {
    try {
      const r = await api(`/api/v1/workloads/${key}/${verb}`, "POST");
      setStatus(`${key}: ${r.result}${r.message ? " (" + r.message + ")" : ""}`);
    } catch (e) { setStatus(e.message); }
    readTail(key);
  };
}

async function readTail(key) {
  const d = $("#detail");
  if (!d) return;
  d.dataset.key = key;
  try {
    // A workload without an admission has no pods yet: say why it waits.
    const w = await api("/api/v1/workloads/" + key);
    const st = w.status || {};
    if (!st.admission && st.state !== "Succeeded" && st.state !== "Failed") {
      d.innerHTML = `<h2>${esc(key)}</h2><table id="pending">
        <tr><th>state</th><td>${esc(st.state)}</td></tr>
        <tr><th>why</th><td>${esc(st.pendingReason || "")}</td></tr>
        <tr><th>position</th><td>${st.position ? `#${st.position} in ClusterQueue ${esc(st.clusterQueue)}` : "in no queue"}</td></tr>
        <tr><th>asks for</th><td>${esc(asks(w))}</td></tr>${images(w)}
        <tr><th>priority</th><td>${esc(String(st.priority ?? 0))}</td></tr></table>
        ${st.state === "Suspended" ? '<button id="park" data-verb="resume">Resume</button>' : ""}`;
      if (st.state === "Suspended") parkButton(key, "resume");
      return;
    }
    const r = await fetch(`/api/v1/workloads/${key}/log?limit=8192`, { headers: { Authorization: "Bearer " + token } });
    const text = r.ok ? await r.text() : (await r.json().catch(() => ({})))?.error?.message || r.status;
    let log = text;
    try { const j = JSON.parse(text); log = j.data ?? text; } catch (e) { /* plain text */ }
    // Park an admitted workload (its GPUs go back, its quota stays); resume
    // a parked one (docs/parking.md). Viewers get the server's refusal.
    const verb = st.state === "Parked" ? "resume"
      : st.state === "Admitted" || st.state === "Running" ? "park" : "";
    d.innerHTML = `<h2>${esc(key)}</h2><table id="pods">${images(w)}
      <tr><th>state</th><td>${esc(st.state)} ${esc(plainReason(w))}
      ${verb ? `<button id="park" data-verb="${verb}">${verb === "park" ? "Park" : "Resume"}</button>` : ""}</td></tr></table>
      <pre class="log" id="log">${esc(log)}</pre>`;
    $("#log").scrollTop = $("#log").scrollHeight;
    if (verb) parkButton(key, verb);
  } catch (e) { d.innerHTML = `<p class="err">${esc(e.message)}</p>`; }
}

// ---- router -----------------------------------------------------------------
const pages = { overview: overviewPage, queues: queuesPage, tenants: tenantsPage,
                nodes: nodesPage, pools: poolsPage, workloads: workloadsPage,
                notebooks: notebooksPage };

async function route() {
  const main = $("#main");
  const [path, query] = (location.hash.slice(2) || "overview").split("?");
  const parts = path.split("/").map(decodeURIComponent);
  if (!token) { $("#nav").hidden = true; $("#signout").hidden = true; $("#who").textContent = ""; return signInPage(main); }
  if (!me) {
    try { me = await api("/api/v1/whoami"); } catch (e) { return signInPage(main, e.message); }
    sessionStorage.setItem("allot.me", JSON.stringify(me));
  }
  if (!watchAbort) {
    watch();
    api("/api/v1/whoami").catch(() => {});  // A revoked token signs out (401).
  }
  $("#nav").hidden = false; $("#signout").hidden = false;
  $("#who").textContent = `${me.user} · ${me.role}${me.tenant ? " · " + me.tenant : ""}`;
  document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("active", a.hash === "#/" + parts[0]));
  main.dataset.page = parts[0];
  try {
    if (parts[0] === "nodes" && parts[1]) await nodePage(main, parts[1]);
    else await (pages[parts[0]] || overviewPage)(main, new URLSearchParams(query || ""));
    setStatus("updated " + new Date().toLocaleTimeString());
  } catch (e) { main.innerHTML = `<p class="err">${esc(e.message)}</p>`; }
}

$("#signout").onclick = signOut;
window.addEventListener("hashchange", route);
setInterval(() => { if (token && !document.hidden) route(); }, 15000);
route();
