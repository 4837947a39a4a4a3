import { pages } from '../sweep/categories.js';
import { LAG_ALERT, severityOf, type AlertKey } from './categories.js';
import { describeLag } from './lag.js';
import { postJson, type Fetch } from './http.js';
import { openCounts, plural, reportCommand, type AlertContext } from './message.js';
import type { AlertSink, Delivery } from './sink.js';
import type { CategoryChange } from './transitions.js';

/**
 * One PagerDuty alert per (account, category), keyed by a stable dedup_key: PagerDuty
 * folds every trigger with the key into one incident while it is open, and the
 * resolve with the same key closes it when the category is back to zero.
 */
export function pagerDutySink(args: { routingKey: string; url: string; fetch: Fetch; timeoutMs: number }): AlertSink {
  return {
    name: 'pagerduty',
    plan(ctx) {
      const deliveries: Delivery[] = [];
      for (const change of ctx.changes) {
        const event = pagerDutyEvent(args.routingKey, ctx, change);
        if (!event) continue;
        deliveries.push({
          label: `pagerduty ${event.event_action} ${change.category}`,
          categories: [change.category],
          send: () => postJson(args.fetch, args.url, JSON.stringify(event), { timeoutMs: args.timeoutMs }),
        });
      }
      return deliveries;
    },
  };
}

/** `sweeper:<account>:<category>`, and `sweeper:<account>:reconciliation_lag` for the lag alert. */
export function dedupKey(account: string, category: AlertKey): string {
  return `sweeper:${account}:${category}`;
}

export interface PagerDutyTrigger {
  routing_key: string;
  event_action: 'trigger';
  dedup_key: string;
  payload: {
    summary: string;
    source: 'sweeper';
    severity: 'critical' | 'warning';
    component: string;
    group: string;
    class: string;
    custom_details: Record<string, unknown>;
  };
}

export interface PagerDutyResolve {
  routing_key: string;
  event_action: 'resolve';
  dedup_key: string;
}

/** The Events API v2 event for one category's change, or null when it has no news. */
export function pagerDutyEvent(
  routingKey: string,
  ctx: AlertContext,
  change: CategoryChange,
): PagerDutyTrigger | PagerDutyResolve | null {
  // Some categories alert but never page (suspected_duplicate): PagerDuty hears nothing of them.
  if (change.category !== LAG_ALERT && !pages(change.category)) return null;
  const dedup_key = dedupKey(ctx.account, change.category);
  switch (change.change) {
    case 'resolved':
      return { routing_key: routingKey, event_action: 'resolve', dedup_key };
    case 'opened':
    case 'increased':
    case 'repeat':
      if (change.category === LAG_ALERT) return lagTrigger(routingKey, ctx, dedup_key);
      return {
        routing_key: routingKey,
        event_action: 'trigger',
        dedup_key,
        payload: {
          summary: `sweeper: ${plural(change.current, `open ${change.category} finding`)} on account ${ctx.account}`,
          source: 'sweeper',
          severity: severityOf(change.category),
          component: ctx.account,
          group: 'payment-reconciliation',
          class: change.category,
          custom_details: {
            account: ctx.account,
            category: change.category,
            open: change.current,
            previous: change.previous,
            unreconciled: ctx.unreconciled,
            findings: openCounts(ctx),
            oldest_open_at: ctx.oldestOpenAt?.toISOString() ?? null,
            run_id: ctx.runId,
            command: reportCommand(ctx.account),
          },
        },
      };
    default:
      return null;
  }
}

/** The account stopped keeping up: nothing says money is wrong, but nothing new is being checked. */
function lagTrigger(routingKey: string, ctx: AlertContext, dedup_key: string): PagerDutyTrigger {
  const lag = ctx.lag;
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key,
    payload: {
      summary: `sweeper: reconciliation of account ${ctx.account} is behind${lag ? `: ${describeLag(lag)}` : ''}`,
      source: 'sweeper',
      severity: severityOf(LAG_ALERT),
      component: ctx.account,
      group: 'payment-reconciliation',
      class: LAG_ALERT,
      custom_details: {
        account: ctx.account,
        watermark_lag_seconds: lag?.watermarkLagSeconds ?? null,
        events_lag_seconds: lag?.eventsLagSeconds ?? null,
        max_lag_seconds: lag?.maxLagSeconds ?? null,
        unreconciled: ctx.unreconciled,
        run_id: ctx.runId,
        command: 'sweeper status',
      },
    },
  };
}
