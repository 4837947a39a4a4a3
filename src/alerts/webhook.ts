import { ALERT_CATEGORIES, type AlertCategory } from './categories.js';
import { postJson, type Fetch } from './http.js';
import { summaryPlan, type AlertContext } from './message.js';
import { SIGNATURE_HEADER, signatureHeader } from './signature.js';
import type { AlertSink } from './sink.js';

export interface WebhookBody {
  /** `reconciliation.lagging`: nothing is open, but a lag is past SWEEPER_MAX_LAG. */
  event: 'findings.open' | 'findings.resolved' | 'reconciliation.lagging';
  run_id: string;
  account: string;
  unreconciled: number;
  /** Every category, zeros included, so receivers see a fixed shape. */
  findings: Record<AlertCategory, number>;
  oldest_open_at: string | null;
  /** The account's lags, when the run read them (docs/judgement.md "Completeness"). */
  lag?: {
    lagging: boolean;
    watermark_lag_seconds: number | null;
    events_lag_seconds: number | null;
    max_lag_seconds: number;
  };
  sent_at: string;
}

export function webhookSink(args: {
  url: string;
  secret: string;
  fetch: Fetch;
  timeoutMs: number;
  clock: () => Date;
}): AlertSink {
  return {
    name: 'webhook',
    plan(ctx) {
      const plan = summaryPlan(ctx);
      if (!plan.send) return [];
      return [
        {
          label: 'webhook post',
          categories: plan.categories,
          send: () => {
            // Signed at send time, so the timestamp a receiver checks is the delivery's own.
            const sentAt = args.clock();
            const raw = JSON.stringify(webhookBody(ctx, sentAt));
            const t = Math.floor(sentAt.getTime() / 1000);
            return postJson(args.fetch, args.url, raw, {
              headers: { [SIGNATURE_HEADER]: signatureHeader(args.secret, t, raw) },
              timeoutMs: args.timeoutMs,
            });
          },
        },
      ];
    },
  };
}

export function webhookBody(ctx: AlertContext, sentAt: Date): WebhookBody {
  return {
    event: ctx.unreconciled > 0 ? 'findings.open' : ctx.lag?.lagging ? 'reconciliation.lagging' : 'findings.resolved',
    run_id: ctx.runId,
    account: ctx.account,
    unreconciled: ctx.unreconciled,
    findings: Object.fromEntries(ALERT_CATEGORIES.map((c) => [c, ctx.counts[c]])) as Record<AlertCategory, number>,
    oldest_open_at: ctx.oldestOpenAt?.toISOString() ?? null,
    ...(ctx.lag
      ? {
          lag: {
            lagging: ctx.lag.lagging,
            watermark_lag_seconds: ctx.lag.watermarkLagSeconds,
            events_lag_seconds: ctx.lag.eventsLagSeconds,
            max_lag_seconds: ctx.lag.maxLagSeconds,
          },
        }
      : {}),
    sent_at: sentAt.toISOString(),
  };
}
