import type { DaySettled } from '../sweep/completeness.js';
import { PALETTE } from './assets.js';
import { html, type Html } from './html.js';

/**
 * Charts drawn on the server as SVG: no script, nothing to build, and the numbers they
 * show are in the page (titles, a table beside them) for people and tests to read.
 * Coordinates are computed here from numbers only; every label goes through `html`.
 */
export interface LineSeries {
  label: string;
  values: readonly number[];
}

const WIDTH = 900;
const HEIGHT = 260;
const MARGIN = { left: 44, right: 16, top: 12, bottom: 30 };

/** The smallest of 1, 2, 5 × 10^n at or above `max`: a y axis people can read. */
export function niceCeiling(max: number): number {
  if (max <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude;
  return 10 * magnitude;
}

/** The colour class of the i-th series. */
export function colourClass(i: number): string {
  return `c${i % PALETTE.length}`;
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * Series over the same instants stacked on each other: each series is a band whose
 * thickness is its value, so the top edge is the total and no series hides another.
 */
export function stackedChart(args: { title: string; at: readonly Date[]; series: readonly LineSeries[] }): Html {
  const { at, series } = args;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const totals = at.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const top = niceCeiling(Math.max(0, ...totals));
  const x = (i: number) => round(MARGIN.left + (at.length <= 1 ? 0 : (i * plotW) / (at.length - 1)));
  const y = (v: number) => round(MARGIN.top + plotH - (v * plotH) / top);
  const yTicks = [0, top / 2, top].filter((v, i, all) => Number.isInteger(v) && all.indexOf(v) === i);
  const spanMs = at.length > 1 ? (at[at.length - 1]?.getTime() ?? 0) - (at[0]?.getTime() ?? 0) : 0;
  const label = (d: Date) => (spanMs <= 2 * 86_400_000 ? d.toISOString().slice(11, 16) : d.toISOString().slice(5, 10));
  const every = Math.max(1, Math.ceil(at.length / 8));
  const xTicks = at.map((d, i) => ({ d, i })).filter(({ i }) => i % every === 0 || i === at.length - 1);
  const below = at.map(() => 0);
  const bands = series.map((s, n) => {
    const lower = [...below];
    s.values.forEach((v, i) => (below[i] = (below[i] ?? 0) + v));
    const upper = [...below];
    const edge = upper.map((v, i) => `${x(i)},${y(v)}`);
    const base = lower.map((v, i) => `${x(i)},${y(v)}`).reverse();
    return html`<polygon
      class="band ${colourClass(n)}"
      data-series="${s.label}"
      points="${[...edge, ...base].join(' ')}"
      ><title>
        ${s.label}: ${s.values[s.values.length - 1] ?? 0} open now, at most ${Math.max(0, ...s.values)}
      </title></polygon
    >`;
  });
  return html`<svg
    viewBox="0 0 ${WIDTH} ${HEIGHT}"
    role="img"
    aria-label="${args.title}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <title>${args.title}</title>
    ${yTicks.map(
      (v) =>
        html`<line class="grid" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(v)}" y2="${y(v)}" />
          <text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
    )}
    ${bands}
    <line class="axis" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(0)}" y2="${y(0)}" />
    ${xTicks.map(({ d, i }) => html`<text x="${x(i)}" y="${HEIGHT - 10}" text-anchor="middle">${label(d)}</text>`)}
  </svg>`;
}

/** The legend under a chart: each series' colour, name and last value. */
export function legend(series: readonly LineSeries[]): Html {
  return html`<div class="legend">
    ${series.map(
      (s, n) =>
        html`<span
          ><span class="swatch ${colourClass(n)}"></span>${s.label}
          <strong>${s.values[s.values.length - 1] ?? 0}</strong></span
        >`,
    )}
  </div>`;
}

/**
 * One account's completeness per day: a bar per day, its settled share green, the rest
 * red, the share above it; a day without charges is an empty outline (nothing to settle).
 */
export function completenessChart(account: string, days: readonly DaySettled[]): Html {
  const w = 360;
  const plotH = 100;
  const top = 22;
  const slot = days.length === 0 ? w : (w - 20) / days.length;
  const bar = round(Math.min(36, slot * 0.6));
  return html`<svg
    viewBox="0 0 ${w} ${top + plotH + 26}"
    role="img"
    aria-label="completeness per day of ${account}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <title>completeness per day of ${account}</title>
    ${days.map((d, i) => {
      const x = round(10 + i * slot + (slot - bar) / 2);
      const settledH = round(plotH * d.fraction);
      const centre = round(x + bar / 2);
      const bars =
        d.charges === 0
          ? html`<rect class="empty" x="${x}" y="${top}" width="${bar}" height="${plotH}" />`
          : html`<rect class="unsettled" x="${x}" y="${top}" width="${bar}" height="${plotH}" />
              <rect
                class="settled"
                x="${x}"
                y="${round(top + plotH - settledH)}"
                width="${bar}"
                height="${settledH}"
              />`;
      return html`<g data-day="${d.day}">
        <title>${d.day}: ${d.charges === 0 ? 'no charges' : `${d.settled} of ${d.charges} charges settled`}</title>
        ${bars}
        <text x="${centre}" y="${top - 6}" text-anchor="middle">${d.charges === 0 ? '—' : percent(d.fraction)}</text>
        <text x="${centre}" y="${top + plotH + 16}" text-anchor="middle">${d.day.slice(5)}</text>
      </g>`;
    })}
  </svg>`;
}

export function percent(fraction: number): string {
  const p = fraction * 100;
  return `${p === 100 || p === 0 ? p.toFixed(0) : p.toFixed(p >= 99 ? 2 : 1)}%`;
}
