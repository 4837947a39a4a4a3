import { html, type Html } from './html.js';

/** An instant as the page shows it: UTC, to the minute, with the exact time on hover. */
export function instant(at: Date | string | null | undefined): Html {
  if (at === null || at === undefined) return html`<span class="none">—</span>`;
  const date = typeof at === 'string' ? new Date(at) : at;
  if (Number.isNaN(date.getTime())) return html`${String(at)}`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>`;
}

/** A span of time in its largest whole unit and the next (`3d 4h`, `12m`, `40s`). */
export function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ];
  for (let i = 0; i < units.length; i += 1) {
    const [unit, size] = units[i]!;
    if (s >= size || unit === 's') {
      const whole = Math.floor(s / size);
      const next = units[i + 1];
      const rest = next ? Math.floor((s % size) / next[1]) : 0;
      return next && rest > 0 && whole < 10 ? `${whole}${unit} ${rest}${next[0]}` : `${whole}${unit}`;
    }
  }
  return `${s}s`;
}

/** How long ago, from the request's clock. */
export function ago(at: Date | null | undefined, now: Date): string {
  return at ? `${span(now.getTime() - at.getTime())} ago` : '—';
}

/** A finding's state as a coloured badge. */
export function stateBadge(state: string): Html {
  return html`<span class="badge ${/^[a-z_]+$/.test(state) ? state : ''}">${state}</span>`;
}

/** A table's head: a `th` per column, right-aligned for the numeric ones; `lead` first (the select-all box). */
export function tableHead(
  columns: readonly string[],
  options: { numeric?: readonly string[]; lead?: Html } = {},
): Html {
  const cells = columns.map((c) => html`<th${options.numeric?.includes(c) ? html` class="num"` : ''}>${c}</th>`);
  return html`<thead>
    <tr>
      ${options.lead ? html`<th>${options.lead}</th>` : ''}${cells}
    </tr>
  </thead>`;
}
