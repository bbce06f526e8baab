#include "cli/report/html_report.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/options/output_file.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::cli {
namespace {

// Debian's libjs-chart.js (Chart.js 3).
const char* const chart_js = "/usr/share/javascript/chart.js/chart.min.js";

// What every page starts with: its title and the styles they share.
const char* const page_top = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>papaya report</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px} .sub{color:#666;margin-bottom:16px}
table{border-collapse:collapse;font-size:13px} td,th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:right}
td:first-child,th:first-child{text-align:left} )";

// The page around the data: its layout, and the script that draws it with Chart.js.
const char* const page_head = R"(.wide{height:380px;position:relative} .half{height:320px;position:relative;flex:1}
.row{display:flex;gap:24px} select{font-size:14px}
</style></head><body>
<h1 id="title"></h1><div class="sub" id="subtitle"></div>
<h2>Memory through one training step</h2>
<div>plan: <select id="plan-select"></select></div>
<table id="peaks"><thead><tr><th>plan</th><th>peak</th><th>at</th><th>the largest saved tensors there</th></tr></thead><tbody></tbody></table>
<div class="wide"><canvas id="timeline"></canvas></div>
<h2>Against the batch</h2>
<div class="row"><div class="half"><canvas id="memory"></canvas></div><div class="half"><canvas id="throughput"></canvas></div></div>
<h2>Plans</h2><table id="plans"><thead></thead><tbody></tbody></table>
<h2 id="layers-title">The plan by layer</h2><table id="layers"><thead><tr><th>layer</th><th>saved tensors</th><th>segment</th><th>held fewer, forward to backward</th><th>time added a step</th></tr></thead><tbody></tbody></table>
<script>)";

const char* const page_script = R"(</script>
<script>
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const bytes = (b) => { let i = 0; while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; } return b.toFixed(i ? 2 : 0) + ' ' + units[i]; };
  const text = (tag, value) => { const e = document.createElement(tag); e.textContent = value; return e; };
  document.getElementById('title').textContent = data.title;
  document.getElementById('subtitle').textContent = data.subtitle;
  const colours = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
  const select = document.getElementById('plan-select');
  const peaks = document.querySelector('#peaks tbody');
  data.timelines.forEach((t, i) => {
    const option = text('option', t.plan); option.value = i; select.appendChild(option);
    const row = document.createElement('tr');
    row.appendChild(text('td', t.plan));
    const peak = text('td', bytes(t.peak_bytes)); peak.id = 'peak-bytes-' + i; peak.dataset.bytes = String(t.peak_bytes);
    row.appendChild(peak);
    const at = text('td', t.peak_at); at.id = 'peak-at-' + i; row.appendChild(at);
    const held = t.peak_point >= 0 && !t.peak_in_optimizer_step ? t.largest[t.peak_point] : [];
    const tensors = text('td', t.peak_in_optimizer_step ? 'none: the optimizer\'s step holds no activations'
      : held.map(([key, form, b]) => key + ' (' + form + ') ' + bytes(b)).join(', '));
    tensors.id = 'peak-tensors-' + i; row.appendChild(tensors);
    peaks.appendChild(row);
  });
  const fixed = { 'weights': '#9c755f', 'gradients': '#edc948', 'AdamW state': '#b07aa1', 'exchange buffers': '#ff9da7',
    'gathered weights': '#d4a6c8', 'parameter copies': '#bab0ac', 'saved raw': '#4e79a7', 'codec scratch': '#e15759',
    'recompute scratch': '#ff6f3c', 'working memory': '#76b7b2' };
  const formColours = ['#f28e2b', '#59a14f', '#86bcb6', '#8cd17d', '#ffbe7d', '#a0cbe8', '#b6992d', '#499894'];
  const colourOf = (name, k) => fixed[name] || formColours[k % formColours.length];
  const seconds = (s) => s >= 1 ? s.toFixed(2) + ' s' : s >= 1e-3 || s === 0 ? (s * 1e3).toFixed(2) + ' ms' : (s * 1e6).toFixed(1) + ' µs';
  let shown = data.timelines[0];
  const timeline = new Chart(document.getElementById('timeline'), {
    type: 'line', data: { labels: [], datasets: [] },
    options: { animation: false, maintainAspectRatio: false, interaction: { mode: 'index', intersect: false },
      elements: { point: { radius: 0 } },
      scales: { x: { ticks: { maxTicksLimit: 24, autoSkip: true } }, y: { stacked: true, ticks: { callback: (v) => bytes(v) } } },
      plugins: { tooltip: { filter: (c) => c.parsed.y, callbacks: { label: (c) => c.dataset.label + ': ' + bytes(c.parsed.y),
        footer: (items) => { const held = shown.largest[items[0].dataIndex] || [];
          return held.length ? ['largest saved tensors here:'].concat(held.map(([key, form, b]) => key + ' (' + form + ') ' + bytes(b))) : []; } } } } } });
  const show = (i) => {
    const t = data.timelines[i];
    shown = t;
    timeline.data.labels = t.labels;
    let forms = 0;
    timeline.data.datasets = t.bands.map((band, k) => {
      const colour = colourOf(band.name, fixed[band.name] ? 0 : forms++);
      return { label: band.name, stack: 'held', fill: k ? '-1' : 'origin', borderColor: colour, backgroundColor: colour + 'aa', borderWidth: 1, data: band.bytes };
    });
    timeline.data.datasets.push({ label: 'peak (' + t.peak_at + ')', stack: 'peak', type: 'line', showLine: false, pointRadius: 6,
      pointBackgroundColor: '#e15759', borderColor: '#e15759', data: t.labels.map((_, p) => p === t.peak_point ? t.peak_bytes : null) });
    timeline.update();
    const layers = document.querySelector('#layers tbody'); layers.replaceChildren();
    document.getElementById('layers-title').textContent = 'The plan by layer: ' + t.plan;
    t.layers.forEach((l) => {
      const row = document.createElement('tr');
      const time = seconds(l.seconds_added) + (l.host_link_seconds ? ' (+ up to ' + seconds(l.host_link_seconds) + ' on the host link)' : '');
      [l.layer, l.tensors, l.segment, bytes(l.bytes_saved), time].forEach((v) => row.appendChild(text('td', v)));
      layers.appendChild(row);
    });
  };
  select.addEventListener('change', () => show(Number(select.value)));
  select.value = String(data.timelines.length - 1);
  show(data.timelines.length - 1);
  const panel = (id, p, unit) => new Chart(document.getElementById(id), {
    type: 'line', data: { datasets: p.series.map((s, k) => ({ label: s.name, data: s.curve.map(([x, y]) => ({ x, y })), borderColor: colours[k % colours.length],
      backgroundColor: colours[k % colours.length], pointRadius: 0, borderWidth: 2 })).concat(p.series.filter((s) => s.points.length).map((s) => ({
      label: s.name + ' (' + p.points_label + ')', marker: true, data: s.points.map(([x, y]) => ({ x, y })), showLine: false, pointRadius: 5, pointStyle: 'rectRot',
      borderColor: colours[p.series.indexOf(s) % colours.length], backgroundColor: colours[p.series.indexOf(s) % colours.length] }))).concat(p.hline == null ? [] : [{ label: p.hline_label,
      data: [{ x: p.x_min, y: p.hline }, { x: p.x_max, y: p.hline }], borderColor: '#222', borderDash: [6, 4], pointRadius: 0, borderWidth: 1 }]) },
    options: { animation: false, maintainAspectRatio: false, parsing: true,
      scales: { x: { type: 'logarithmic', title: { display: true, text: 'batch' } }, y: { title: { display: true, text: unit } } },
      plugins: { title: { display: true, text: p.title },
        subtitle: { display: p.series.some((s) => s.points.length), text: 'markers: ' + p.points_label },
        legend: { labels: { filter: (item, chart) => !chart.datasets[item.datasetIndex].marker } } } } });
  panel('memory', data.curves.memory, data.curves.memory.y_label);
  panel('throughput', data.curves.throughput, 'samples/s');
  const plans = document.getElementById('plans');
  const head = document.createElement('tr'); data.columns.forEach((c) => head.appendChild(text('th', c))); plans.tHead.appendChild(head);
  data.plans.forEach((r) => { const row = document.createElement('tr'); r.forEach((v) => row.appendChild(text('td', v))); plans.tBodies[0].appendChild(row); });
  document.body.dataset.rendered = 'yes';
})();
</script></body></html>
)";

// A page of bar charts, one bar a column of the table (a GPU type), and the table.
const char* const bars_body = R"(.bars{display:flex;gap:24px;flex-wrap:wrap} .bar{height:300px;width:420px;position:relative}
.notes{color:#666;font-size:13px}
</style></head><body>
<h1 id="title"></h1><div class="sub" id="subtitle"></div>
<div class="bars" id="bars"></div>
<h2>Each</h2><table id="rows"><thead></thead><tbody></tbody></table>
<ul class="notes" id="notes"></ul>
<script>)";

const char* const bars_script = R"(</script>
<script>
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const text = (tag, value) => { const e = document.createElement(tag); e.textContent = value; return e; };
  document.getElementById('title').textContent = data.title;
  document.getElementById('subtitle').textContent = data.subtitle;
  const colours = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
  data.bars.forEach((b, k) => {
    const box = document.createElement('div'); box.className = 'bar';
    const canvas = document.createElement('canvas'); canvas.id = 'bar-' + k; box.appendChild(canvas);
    document.getElementById('bars').appendChild(box);
    new Chart(canvas, { type: 'bar', data: { labels: data.labels, datasets: [{ label: b.unit, data: b.values,
      backgroundColor: data.labels.map((_, i) => colours[i % colours.length]) }] },
      options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false }, title: { display: true, text: b.title } },
        scales: { y: { beginAtZero: true, title: { display: true, text: b.unit } } } } });
  });
  const rows = document.getElementById('rows');
  const head = document.createElement('tr'); data.columns.forEach((c) => head.appendChild(text('th', c))); rows.tHead.appendChild(head);
  data.rows.forEach((r) => { const row = document.createElement('tr'); r.forEach((v) => row.appendChild(text('td', v))); rows.tBodies[0].appendChild(row); });
  data.notes.forEach((n) => document.getElementById('notes').appendChild(text('li', n)));
  document.body.dataset.rendered = 'yes';
})();
</script></body></html>
)";

// The top, `body`, Chart.js, the data, then `script`: one page, written atomically.
void write_page(const std::string& path, const char* body, const nlohmann::json& report, const char* script) {
  std::ifstream library(chart_js);
  std::stringstream chart;
  chart << library.rdbuf();
  std::string data = report.dump();
  // Inside <script>, "</" would end it early.
  for (size_t at = data.find("</"); at != std::string::npos; at = data.find("</", at + 3)) data.replace(at, 2, "<\\/");
  model::write_text_file(path, std::string(page_top) + body + chart.str() +
                                   "</script>\n<script type=\"application/json\" id=\"report-data\">" + data + script);
}

}  // namespace

nlohmann::json panel_json(const PlotPanel& panel, int64_t top) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : panel.series) series.push_back({{"name", s.name}, {"curve", s.curve}, {"points", s.points}});
  return {{"title", panel.title},
          {"y_label", panel.y_label},
          {"series", series},
          {"hline", panel.hline ? nlohmann::json(*panel.hline) : nlohmann::json()},
          {"hline_label", panel.hline_label},
          {"points_label", panel.points_label},
          {"x_min", 1},
          {"x_max", top}};
}

void check_html_report(const std::string& path, const std::string& option) {
  if (!std::filesystem::is_regular_file(chart_js)) {
    throw InputError(option + " " + path + ": the page draws with Chart.js, which is not installed (" + chart_js +
                     ": apt-get install libjs-chart.js)");
  }
  check_writable(path, option);
}

void write_html_report(const std::string& path, const nlohmann::json& report) {
  write_page(path, page_head, report, page_script);
}

void write_html_bars(const std::string& path, const nlohmann::json& report) { write_page(path, bars_body, report, bars_script); }

}  // namespace papaya::cli
