/**
 * The review page's two static files, served from /static/. They are kept as strings in
 * a module rather than as .css/.js files because every build of sweeper is `tsc` alone
 * (scripts/build.mjs, jobs/Dockerfile), which copies nothing but compiled TypeScript.
 * The Content-Security-Policy allows scripts and styles from this origin only, so this
 * script is the only one a page can run, and no page has inline script or style.
 */
/** One colour per series of a chart, as classes `c0`…: the legend's swatches and the SVG's lines share them. */
export const PALETTE = [
  '#3451b2',
  '#c2410c',
  '#15803d',
  '#b91c1c',
  '#7c3aed',
  '#0e7490',
  '#a16207',
  '#be185d',
  '#4d7c0f',
  '#475569',
  '#1d4ed8',
  '#9333ea',
] as const;

const paletteCss = PALETTE.map(
  (colour, i) => `.c${i} { stroke: ${colour}; fill: ${colour}; } .swatch.c${i} { background: ${colour}; }`,
).join('\n');

export const REVIEW_CSS = `
:root {
  --ink: #1d2330; --muted: #5b6475; --line: #dde1e8; --paper: #ffffff; --ground: #f4f6f9;
  --accent: #3451b2; --ok: #1f7a4d; --warn: #a15c00; --bad: #b42318; --person: #6b3fa0;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px; line-height: 1.45; color: var(--ink); background: var(--ground);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 20px 0 8px; }
h3 { font-size: 14px; margin: 0 0 6px; }
.top { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d2330; color: #fff; }
.top a { color: #dfe6ff; }
.brand { font-weight: 700; font-size: 16px; color: #fff !important; }
.brand span { font-weight: 400; opacity: 0.7; }
.top nav { display: flex; gap: 16px; flex: 1; }
.top nav a[aria-current="page"] { color: #fff; font-weight: 600; border-bottom: 2px solid #8ea6ff; }
.who { display: flex; align-items: center; gap: 8px; }
.who .name { font-weight: 600; }
.banner { margin: 0; padding: 8px 24px; background: #fff4d6; color: #6b4500; border-bottom: 1px solid #f1d48a; }
main { padding: 20px 24px 40px; max-width: 1400px; }
.card { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
.narrow { max-width: 460px; margin: 40px auto; }
.stack { display: flex; flex-direction: column; gap: 10px; }
.stack label { display: flex; flex-direction: column; gap: 4px; font-weight: 600; }
input, select, textarea, button { font: inherit; }
input[type="text"], input[type="password"], select, textarea {
  padding: 5px 8px; border: 1px solid #c4cad6; border-radius: 5px; background: #fff; color: var(--ink);
}
textarea { width: 100%; min-height: 56px; }
button { padding: 6px 12px; border-radius: 5px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
button.link { background: none; border: none; color: #dfe6ff; padding: 0; text-decoration: underline; }
form.inline { display: inline; }
.problem { color: var(--bad); font-weight: 600; }
.notice { background: #e8f5ee; border: 1px solid #b5dec7; color: #145c39; padding: 8px 12px; border-radius: 6px; }
.filters { display: flex; flex-wrap: wrap; gap: 10px 14px; align-items: flex-end; }
.filters label { display: flex; flex-direction: column; gap: 2px; font-size: 12px; color: var(--muted); }
.filters input[type="text"] { width: 130px; }
.filters input.amount { width: 80px; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0; align-items: center; }
.chip { border: 1px solid var(--line); background: #fff; border-radius: 14px; padding: 2px 10px; }
.chip strong { margin-left: 4px; }
.chip[aria-current="true"] { border-color: var(--accent); background: #eef1fb; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafbfc; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr:hover td { background: #f8f9fc; }
.reason { color: var(--muted); max-width: 420px; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; border: 1px solid; }
.badge.open { color: var(--bad); border-color: #f2b8b5; background: #fdf0ef; }
.badge.repaired, .badge.resolved { color: var(--ok); border-color: #b5dec7; background: #eef8f2; }
.badge.ignored { color: var(--muted); border-color: var(--line); background: #f4f5f7; }
.badge.applied { color: var(--ok); border-color: #b5dec7; background: #eef8f2; }
.badge.refused { color: var(--bad); border-color: #f2b8b5; background: #fdf0ef; }
.badge.planned { color: #30507a; border-color: #b7c7e0; background: #eef3fa; }
ul.plain { list-style: none; padding: 0; margin: 4px 0 0; }
table.steps tr.money td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
.badge.resolver { color: #145c39; border-color: #8fd0ad; background: #e8f5ee; }
.badge.reader { color: #5b6475; border-color: #c4cad6; background: #f4f5f7; }
.badge.automatic { color: #30507a; border-color: #b7c7e0; background: #eef3fa; }
.badge.person { color: var(--person); border-color: #d4c2ea; background: #f6f0fc; }
.pager { display: flex; gap: 16px; margin: 12px 0; }
.bulk { margin-top: 12px; display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-end; }
.bulk textarea { width: 420px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.evidence { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; }
.evidence .card h3 .sub, th .sub { font-weight: 400; color: var(--muted); }
.scroll { overflow-x: auto; }
.evidence-table th[scope="row"] { white-space: nowrap; color: var(--muted); font-weight: 600; background: #fafbfc; }
.evidence-table thead th { font-size: 13px; color: var(--ink); min-width: 190px; }
.evidence-table td { overflow-wrap: anywhere; }
.evidence-table tr.differs td { background: #fdf0ef; }
.all-columns { margin-top: 12px; }
.all-columns .evidence { margin-top: 8px; }
.none { color: var(--muted); font-style: italic; }
.why { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9; padding: 8px; border-radius: 6px; margin: 6px 0 0; }
.actions { margin-top: 16px; }
.actions .buttons { display: flex; gap: 8px; margin-top: 8px; }
.charts { display: grid; grid-template-columns: 1fr; gap: 16px; }
.chart svg { width: 100%; height: auto; display: block; }
.chart .axis { stroke: #9aa3b2; stroke-width: 1; }
.chart .grid { stroke: #eceff4; stroke-width: 1; }
.chart text { font-size: 11px; fill: #5b6475; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 6px; font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
.completeness { display: grid; grid-template-columns: 1fr; gap: 12px; }
.lagging { color: var(--bad); font-weight: 600; }
.status-failed, .status-interrupted { color: var(--bad); font-weight: 600; }
.status-running { color: var(--warn); font-weight: 600; }
.small { font-size: 12px; color: var(--muted); }
.chart polygon.band { stroke-width: 1; fill-opacity: 0.75; }
.chart .settled { fill: #1f7a4d; }
.chart .unsettled { fill: #f2b8b5; }
.chart .empty { fill: none; stroke: #c4cad6; stroke-dasharray: 3 3; }
.account-completeness { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.account-completeness svg { width: 360px; max-width: 100%; }
.account-completeness table { width: auto; min-width: 260px; }
${paletteCss}
`;

export const REVIEW_JS = `'use strict';
// The header's checkbox selects or clears every finding of the list at once. Without
// script the boxes still work one by one.
document.addEventListener('change', function (event) {
  var box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.hasAttribute('data-select-all')) return;
  var items = document.querySelectorAll('input[type="checkbox"][name="id"]');
  for (var i = 0; i < items.length; i += 1) items[i].checked = box.checked;
});
`;
