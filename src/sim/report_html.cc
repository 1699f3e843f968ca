// The self-contained HTML report: the summaries as JSON in the page and a
// small script that draws tables and inline SVG charts. No network access.
#include <string>

#include "core/encoding.h"
#include "sim/report.h"

namespace allot::sim {
namespace {

// Drawn in the page: a table per policy, then charts over the time series.
constexpr char kScript[] = R"JS(
const data = JSON.parse(document.getElementById('data').textContent);
const $ = (tag, attrs = {}, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const h = (s) => (s / 3600).toFixed(2);
const colors = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b',
  '#e377c2','#7f7f7f','#bcbd22','#17becf','#393b79','#637939','#8c6d31',
  '#843c39','#7b4173','#3182bd','#e6550d','#31a354','#756bb1','#636363'];
const main = document.getElementById('main');

function table(head, rows) {
  const t = $('table');
  const tr = $('tr');
  head.forEach((c) => tr.appendChild($('th', {}, c)));
  t.appendChild(tr);
  rows.forEach((r) => {
    const row = $('tr');
    r.forEach((c) => row.appendChild($('td', {}, String(c))));
    t.appendChild(row);
  });
  return t;
}

// series: [{name, values (null = gap)}], x in windows.
function chart(title, series, windowSec, yMax) {
  const W = 900, H = 260, L = 50, B = 30, T = 20, R = 10;
  const n = Math.max(1, ...series.map((s) => s.values.length));
  let max = yMax;
  if (max === undefined) {
    max = 0;
    series.forEach((s) => s.values.forEach((v) => { if (v !== null && v > max) max = v; }));
    if (max === 0) max = 1;
  }
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('width', W);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  const x = (i) => L + (W - L - R) * i / Math.max(1, n - 1);
  const y = (v) => H - B - (H - B - T) * v / max;
  el('text', {x: L, y: 14, 'font-size': 13, 'font-weight': 'bold'}, title);
  for (let k = 0; k <= 4; k++) {
    const v = max * k / 4;
    el('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#ddd'});
    el('text', {x: 4, y: y(v) + 4, 'font-size': 10}, +v.toPrecision(3));
  }
  const days = n * windowSec / 86400;
  for (let k = 0; k <= 5; k++) {
    el('text', {x: L + (W - L - R) * k / 5 - 10, y: H - 10, 'font-size': 10},
       (days * k / 5).toFixed(1) + 'd');
  }
  series.forEach((s, si) => {
    let d = '', pen = false;
    s.values.forEach((v, i) => {
      if (v === null) { pen = false; return; }
      d += (pen ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1);
      pen = true;
    });
    el('path', {d, fill: 'none', stroke: colors[si % colors.length], 'stroke-width': 1.2});
  });
  const div = $('div', {class: 'chart'});
  div.appendChild(svg);
  const legend = $('div', {class: 'legend'});
  series.forEach((s, si) => {
    const sp = $('span', {}, '\u25A0 ' + s.name + ' ');
    sp.style.color = colors[si % colors.length];
    legend.appendChild(sp);
  });
  div.appendChild(legend);
  return div;
}

const st = (s) => [s.count, h(s.mean), h(s.p50), h(s.p95), h(s.p99)];
main.appendChild($('h2', {}, 'Summary'));
main.appendChild(table(
  ['policy', 'jobs done', 'rejected', 'JCT mean h', 'p50', 'p95', 'p99',
   'wait mean h', 'p50', 'p95', 'p99', 'utilization', 'Jain (mean, contended)',
   'Jain min', 'makespan d', 'preemptions', 'GPU-h lost (preempt)',
   'node failures', 'GPU-h lost (failures)'],
  data.map((s) => [s.policy, s.jobs.completed, s.jobs.rejected,
    ...st(s.jctSeconds).slice(1), ...st(s.queueingDelaySeconds).slice(1),
    s.utilization.overall, s.fairness.jainMean, s.fairness.jainMin,
    (s.makespanSeconds / 86400).toFixed(2), s.preemptions.count,
    s.preemptions.gpuHoursLost, s.failures.nodeFailures,
    s.failures.gpuHoursLost])));
if (data.some((s) => s.parking)) {
  main.appendChild($('h2', {}, 'Parking: idle long-running jobs (a modelled idleness)'));
  main.appendChild(table(
    ['policy', 'parking', 'long-running jobs', 'preemptible jobs', 'GPU-h held idle',
     'GPU-h given back', 'GPU-h lent', 'parks', 'resumes', 'resumes that waited',
     'resume p50 s', 'p95', 'p99', 'max', 'reclaims', 'GPU-h lost to reclaims'],
    data.filter((s) => s.parking).map((s) => {
      const p = s.parking, l = p.resumeLatencySeconds;
      return [s.policy, p.parking ? 'on' : 'off', p.longRunningJobs, p.preemptibleJobs,
        p.idleHeldGpuHours, p.gpuHoursGivenBack, p.gpuHoursLent, p.parks, p.resumes,
        p.resumesThatWaited, l.p50, l.p95, l.p99, l.max, p.reclaims, p.reclaimGpuHoursLost];
    })));
}
const w = data[0].timeseries.windowSeconds;
main.appendChild(chart('GPU utilization per window', data.map((s) => ({
  name: s.policy, values: s.timeseries.utilization})), w, 1));
main.appendChild(chart("Jain's index per contended window (gaps: uncontended)",
  data.map((s) => ({name: s.policy, values: s.timeseries.jain})), w, 1));
data.forEach((s) => {
  main.appendChild($('h2', {}, 'Policy ' + s.policy));
  main.appendChild(table(
    ['tenant', 'entitled GPUs', 'jobs', 'done', 'GPU-hours', 'JCT mean h',
     'p50', 'p95', 'p99', 'wait mean h', 'p50', 'p95', 'p99'],
    Object.entries(s.tenants).map(([name, t]) => [name, t.entitledGpus,
      t.jobs, t.completed, t.gpuHours, ...st(t.jctSeconds).slice(1),
      ...st(t.queueingDelaySeconds).slice(1)])));
  main.appendChild(chart('Pending jobs per tenant (' + s.policy + ')',
    Object.entries(s.timeseries.pendingJobs).map(([name, v]) => ({name, values: v})), w));
  if (s.jobs.rejectedJobs.length) {
    main.appendChild($('h3', {}, 'Rejected jobs (first ' + s.jobs.rejectedJobs.length + ' of ' + s.jobs.rejected + ')'));
    main.appendChild(table(['line', 'why'], s.jobs.rejectedJobs.map((e) => [e.line, e.message])));
  }
});
const tr = data[0].trace;
main.appendChild($('h2', {}, 'Trace'));
main.appendChild($('p', {}, `${tr.format} ${tr.source}: ${tr.rows} rows, ${tr.jobs} jobs, ${tr.malformedRows} malformed rows. ` + tr.notes.join('; ')));
if (tr.malformed.length) {
  main.appendChild(table(['line', 'problem'], tr.malformed.map((e) => [e.line, e.message])));
}
)JS";

}  // namespace

std::string HtmlReport(const std::vector<boost::json::object>& summaries,
                       const std::string& title) {
  boost::json::array arr;
  for (const auto& s : summaries) arr.push_back(s);
  std::string data = ToJson(arr);
  // Inside <script>, "</" could close the element: escape every '<'.
  std::string safe;
  for (char c : data) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>" +
      core::HtmlEscape(title) +
      "</title>\n<style>body{font-family:sans-serif;margin:20px}"
      "table{border-collapse:collapse;margin:8px 0;font-size:12px}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}"
      ".chart{margin:12px 0}.legend{font-size:11px}</style>\n</head><body>\n"
      "<h1>" + core::HtmlEscape(title) + "</h1>\n<div id=\"main\"></div>\n"
      "<script type=\"application/json\" id=\"data\">" + safe +
      "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
  return html;
}

}  // namespace allot::sim
