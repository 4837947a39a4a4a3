import { readCompletenessAll, type AccountCompleteness } from '../sweep/completeness.js';
import { completenessChart, legend, percent, stackedChart } from './charts.js';
import type { ReviewRoute, RouteContext, RouteResult } from './context.js';
import { ago, instant, span, tableHead } from './format.js';
import { html, localUrl, type Html } from './html.js';
import { readOpenSeries, readRuns, type OpenSeries, type RunRow } from './runs-query.js';

/**
 * Runs and charts: open findings over time per category, completeness per day per
 * account (src/sweep/completeness.ts, as `sweeper status` measures it), and the runs with
 * their counts and durations, newest first.
 */
const RANGES = { '1d': 25, '7d': 29, '30d': 31, '90d': 46 } as const;
type Range = keyof typeof RANGES;
const DAY_MS = 86_400_000;
/** Completeness is counted over this many days of the mirror (as far as it reaches). */
const COMPLETENESS_DAYS = 7;

async function runsPage(ctx: RouteContext): Promise<RouteResult> {
  const { deps } = ctx;
  const query = ctx.request.query as Record<string, unknown>;
  const range: Range = typeof query.range === 'string' && query.range in RANGES ? (query.range as Range) : '30d';
  const account = typeof query.account === 'string' && query.account !== '' ? query.account.slice(0, 200) : null;
  const before = parseBefore(query.before);
  const now = deps.clock();
  const days = Math.min(COMPLETENESS_DAYS, Math.max(1, Math.floor(deps.config.retentionMs / DAY_MS)));
  const [series, completeness, runs] = await Promise.all([
    readOpenSeries(deps.pool, {
      from: new Date(now.getTime() - Number.parseInt(range, 10) * DAY_MS),
      to: now,
      points: RANGES[range],
      account,
    }),
    readCompletenessAll(deps.pool, deps.config.accounts, { now, days, maxLagMs: deps.config.maxLagMs }),
    readRuns(deps.pool, { account, before }),
  ]);
  const body = html` <h1>Runs and charts</h1>
    ${openChart(series, range, account)}
    <h2>Completeness per day</h2>
    <p class="small">
      Of each day's charges in the mirror, the share judged and not held by an open finding (docs/judgement.md,
      "Completeness"). Today's most recent charges are not settled yet, by design.
    </p>
    <div class="completeness">${completeness.map((c) => completenessCard(c))}</div>
    <h2>Runs</h2>
    ${runsTable(runs.rows, now)}
    ${runs.hasMore && runs.rows.length > 0 ? nextRunsLink(runs.rows[runs.rows.length - 1]!, range, account) : ''}`;
  return { kind: 'page', title: 'Runs', body };
}

/** A `before` cursor of a list (`ISO-instant|id`): null when absent or not one. */
export function parseBefore(value: unknown): { at: Date; id: string } | null {
  if (typeof value !== 'string') return null;
  const [at, id] = value.split('|');
  const date = new Date(at ?? '');
  return id && !Number.isNaN(date.getTime()) ? { at: date, id } : null;
}

function openChart(series: OpenSeries, range: Range, account: string | null): Html {
  const lines = [...series.byCategory.entries()].map(([label, values]) => ({ label, values }));
  const links = (Object.keys(RANGES) as Range[]).map(
    (r) =>
      html`<a href="${localUrl('/runs', { range: r, account })}" ${r === range ? html` aria-current="page"` : ''}
        >${r}</a
      >`,
  );
  return html`<section class="card chart" id="open-findings">
    <h2>
      Open findings over time, per category
      <span class="small">(last ${range}${account ? html`, ${account}` : ''})</span>
    </h2>
    <p class="small">Range: ${links.map((l, i) => html`${i > 0 ? ' · ' : ''}${l}`)}</p>
    ${
      lines.length === 0
        ? html`<p class="none">No finding was open in this range.</p>`
        : html`${stackedChart({ title: `open findings per category, last ${range}`, at: series.at, series: lines })}${legend(lines)}`
    }
  </section>`;
}

function completenessCard(c: AccountCompleteness): Html {
  return html`<section class="card chart" data-account="${c.account}">
    <h3>${c.account}</h3>
    <p class="small">
      watermark
      ${c.watermark ? html`${instant(c.watermark)} (${span((c.watermark_lag_seconds ?? 0) * 1000)} behind)` : 'none yet'};
      events ${c.events_cursor ? html`${instant(c.events_cursor)}` : 'not read yet'}
      ${c.lagging ? html`<span class="lagging">— lagging past SWEEPER_MAX_LAG</span>` : ''}
    </p>
    <div class="account-completeness">
      ${completenessChart(c.account, c.days)}
      <table class="small">
        ${tableHead(['day', 'charges', 'settled', 'share'], { numeric: ['charges', 'settled', 'share'] })}
        <tbody>
          ${c.days.map(
            (d) =>
              html`<tr>
                <td>${d.day}</td>
                <td class="num">${d.charges}</td>
                <td class="num">${d.settled}</td>
                <td class="num">${d.charges === 0 ? '—' : percent(d.fraction)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}

function counts(values: Record<string, number>, skip: string[] = []): { total: number; detail: string } {
  const entries = Object.entries(values).filter(([k, v]) => !skip.includes(k) && v > 0);
  return {
    total: entries.reduce((sum, [, v]) => sum + v, 0),
    detail: entries.map(([k, v]) => `${k} ${v}`).join(', '),
  };
}

function runsTable(runs: readonly RunRow[], now: Date): Html {
  if (runs.length === 0) return html`<p class="none card">No run yet.</p>`;
  return html`<table class="runs">
    ${tableHead(['started', 'run', 'mode', 'account', 'status', 'duration', 'charges', 'matched', 'found', 'repaired', 'open after', 'window'], { numeric: ['duration', 'charges', 'matched', 'found', 'repaired', 'open after'] })}
    <tbody>
      ${runs.map((r) => {
        const found = counts(r.findings, ['matched']);
        const repaired = counts(r.repaired);
        const end = r.finished_at ?? now;
        return html`<tr data-run="${r.id}">
          <td title="${r.started_at.toISOString()}">${ago(r.started_at, now)}</td>
          <td class="mono small">${r.id}</td>
          <td>${r.mode}</td>
          <td class="mono">${r.account}${r.shard ? ` [${r.shard}]` : ''}</td>
          <td class="status-${/^[a-z]+$/.test(r.status) ? r.status : ''}">
            ${r.status}${r.error ? html`<div class="small">${r.error}</div>` : ''}
          </td>
          <td class="num">${span(end.getTime() - r.started_at.getTime())}${r.finished_at ? '' : '…'}</td>
          <td class="num">${Number(r.charges_scanned).toLocaleString('en-US')}</td>
          <td class="num">${r.findings.matched ?? 0}</td>
          <td class="num" title="${found.detail}">${found.total}</td>
          <td class="num" title="${repaired.detail}">${repaired.total}</td>
          <td class="num">${r.unreconciled ?? ''}</td>
          <td class="small">${instant(r.window_from)} → ${instant(r.window_to)}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function nextRunsLink(last: RunRow, range: Range, account: string | null): Html {
  const before = `${last.started_at.toISOString()}|${last.id}`;
  return html`<nav class="pager">
    <a href="${localUrl('/runs', { range, account, before })}" rel="next">older runs →</a>
  </nav>`;
}

export const runsPageRoutes: ReviewRoute[] = [{ method: 'GET', path: '/runs', access: 'reader', handler: runsPage }];
