import type { Queryable } from '../db/pool.js';
import { forOperator, type Logger } from '../log.js';
import type { Category } from '../sweep/categories.js';
import { ALERT_CATEGORIES, ALERT_KEYS, LAG_ALERT, type AlertCategory, type AlertKey } from './categories.js';
import type { LagStatus } from './lag.js';
import { alertSecrets, type AlertConfig } from './config.js';
import { DEFAULT_TIMEOUT_MS, type Fetch } from './http.js';
import type { AlertContext } from './message.js';
import { readOpenFindings } from './open-findings.js';
import { pagerDutySink } from './pagerduty.js';
import { redactSecrets } from './redact.js';
import { registerSecret, registerSecretUrl } from '../secrets.js';
import type { AlertSink, Delivery, SinkName } from './sink.js';
import { slackSink } from './slack.js';
import { loadAlertState, recordDelivered, recordQuietCounts } from './state-store.js';
import { diffCategories } from './transitions.js';
import { webhookSink } from './webhook.js';
import { errorMessage } from '../errors.js';

export interface AlerterDeps {
  pool: Queryable;
  config: AlertConfig;
  clock: () => Date;
  logger: Logger;
  /** Defaults to the global fetch. */
  fetch?: Fetch;
  /** Per delivery; a sink that does not answer in time counts as failed. */
  timeoutMs?: number;
}

export interface NotifyInput {
  runId: string;
  account: string;
  openByCategory: Readonly<Record<Category, number>>;
  oldestOpenAt: Date | null;
  /**
   * The account's lags (src/sweep/completeness.ts): the `reconciliation_lag` alert
   * fires while `lagging`, and resolves when it is not. Without it that alert is left
   * as it stands (neither fired nor resolved).
   */
  lag?: LagStatus;
  /**
   * Only the lag alert: the run of this account failed, so its findings were not
   * brought up to date, but a stalled account must still page.
   */
  lagOnly?: boolean;
}

export interface NotifyResult {
  /** Deliveries the sinks accepted. */
  sent: number;
  /** Deliveries that failed (non-2xx, network error, timeout); the next run retries them. */
  failed: number;
  /** One line per failure, credentials redacted. */
  errors: string[];
}

export interface Alerter {
  readonly sinks: readonly SinkName[];
  notify(input: NotifyInput): Promise<NotifyResult>;
  /** `notify` with the account's open findings read from the database. */
  notifyAccount(input: { runId: string; account: string; lag?: LagStatus; lagOnly?: boolean }): Promise<NotifyResult>;
}

/**
 * Delivers one account's alert to every configured sink. Each sink keeps its own
 * state, so a sink that was down catches up on its own without re-paging the
 * others. Delivery failures are logged and returned, never thrown; database
 * errors are thrown (the state could not be read or kept).
 */
export function createAlerter(deps: AlerterDeps): Alerter {
  const secrets = alertSecrets(deps.config);
  // Also for the logger and every other output of a process that did not register them.
  for (const secret of secrets) registerSecret(secret);
  if (deps.config.slack) registerSecretUrl(deps.config.slack.webhookUrl);
  const sinks = configuredSinkList(deps);
  const run: AlertRun = { deps, secrets };

  async function notify(input: NotifyInput): Promise<NotifyResult> {
    if (sinks.length === 0) return { sent: 0, failed: 0, errors: [] };
    const now = deps.clock();
    const counts = Object.fromEntries(
      ALERT_CATEGORIES.map((c) => [c, Math.max(0, Math.trunc(input.openByCategory[c]))]),
    ) as Record<AlertCategory, number>;
    const results = await Promise.all(sinks.map((sink) => notifySink(run, sink, input, counts, now)));
    return {
      sent: results.reduce((n, r) => n + r.sent, 0),
      failed: results.reduce((n, r) => n + r.failed, 0),
      errors: results.flatMap((r) => r.errors),
    };
  }

  return {
    sinks: sinks.map((s) => s.name),
    notify,
    async notifyAccount({ runId, account, lag, lagOnly }) {
      if (sinks.length === 0) return { sent: 0, failed: 0, errors: [] };
      const open = await readOpenFindings(deps.pool, account);
      return notify({ runId, account, ...open, ...(lag ? { lag } : {}), ...(lagOnly ? { lagOnly } : {}) });
    },
  };
}

/** What every delivery of one alerter shares. */
interface AlertRun {
  deps: AlerterDeps;
  /** Values no log line or returned error may carry. */
  secrets: readonly string[];
}

function configuredSinkList(deps: AlerterDeps): AlertSink[] {
  const fetch = deps.fetch ?? globalThis.fetch;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const sinks: AlertSink[] = [];
  const { slack, pagerduty, webhook } = deps.config;
  if (slack) sinks.push(slackSink({ webhookUrl: slack.webhookUrl, fetch, timeoutMs }));
  if (pagerduty) sinks.push(pagerDutySink({ routingKey: pagerduty.routingKey, url: pagerduty.url, fetch, timeoutMs }));
  if (webhook)
    sinks.push(webhookSink({ url: webhook.url, secret: webhook.secret, fetch, timeoutMs, clock: deps.clock }));
  return sinks;
}

/** The alert keys one notification judges: the categories, the lag alert, or both. */
function keysOf(input: NotifyInput): readonly AlertKey[] {
  if (input.lag) return input.lagOnly ? [LAG_ALERT] : ALERT_KEYS;
  return input.lagOnly ? [] : ALERT_CATEGORIES;
}

async function notifySink(
  run: AlertRun,
  sink: AlertSink,
  input: NotifyInput,
  counts: Record<AlertCategory, number>,
  now: Date,
): Promise<NotifyResult> {
  const { deps } = run;
  const state = await loadAlertState(deps.pool, sink.name, input.account);
  const all: Record<AlertKey, number> = { ...counts, [LAG_ALERT]: input.lag?.lagging ? 1 : 0 };
  const changes = diffCategories(keysOf(input), state, all, now, deps.config.repeatMs);
  const ctx: AlertContext = {
    runId: input.runId,
    account: input.account,
    now,
    counts,
    unreconciled: ALERT_CATEGORIES.reduce((sum, c) => sum + counts[c], 0),
    oldestOpenAt: input.oldestOpenAt,
    changes,
    lag: input.lag ?? null,
  };
  const deliveries = sink.plan(ctx);
  const outcomes = await Promise.all(deliveries.map((d) => attempt(run, sink.name, input, d)));

  const result: NotifyResult = { sent: 0, failed: 0, errors: [] };
  for (const [i, outcome] of outcomes.entries()) {
    const delivery = deliveries[i] as Delivery;
    if (outcome === null) {
      result.sent += 1;
      await recordDelivered(deps.pool, {
        sink: sink.name,
        account: input.account,
        sentAt: now,
        counts: delivery.categories.map((category) => ({ category, count: all[category] })),
      });
    } else {
      result.failed += 1;
      result.errors.push(outcome);
    }
  }
  const carried = new Set(deliveries.flatMap((d) => d.categories));
  await recordQuietCounts(deps.pool, {
    sink: sink.name,
    account: input.account,
    counts: changes
      .filter((c) => c.change === 'decreased' && !carried.has(c.category))
      .map((c) => ({ category: c.category, count: c.current })),
  });
  return result;
}

/** null on success, else the failure as one redacted line. */
async function attempt(run: AlertRun, sink: SinkName, input: NotifyInput, delivery: Delivery): Promise<string | null> {
  const log = {
    sink,
    account: input.account,
    run_id: input.runId,
    delivery: delivery.label,
    categories: delivery.categories,
  };
  try {
    await delivery.send();
    run.deps.logger.info(forOperator(log), 'alert delivered');
    return null;
  } catch (error) {
    const message = redactSecrets(errorMessage(error), run.secrets);
    run.deps.logger.warn({ ...log, error: message }, 'alert delivery failed; the next run retries it');
    return `${delivery.label} for ${input.account}: ${message}`;
  }
}
