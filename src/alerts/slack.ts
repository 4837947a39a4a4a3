import { LAG_ALERT, severityOf } from './categories.js';
import { describeLag } from './lag.js';
import { postJson, type Fetch } from './http.js';
import { oldestAge, plural, reportCommand, summaryPlan, type AlertContext } from './message.js';
import type { AlertSink } from './sink.js';
import type { CategoryChange } from './transitions.js';

export interface SlackMessage {
  text: string;
  blocks: Array<Record<string, unknown>>;
}

export function slackSink(args: { webhookUrl: string; fetch: Fetch; timeoutMs: number }): AlertSink {
  return {
    name: 'slack',
    plan(ctx) {
      const plan = summaryPlan(ctx);
      if (!plan.send) return [];
      return [
        {
          label: 'slack message',
          categories: plan.categories,
          send: () =>
            postJson(args.fetch, args.webhookUrl, JSON.stringify(slackMessage(ctx)), { timeoutMs: args.timeoutMs }),
        },
      ];
    },
  };
}

/**
 * `text` is complete on its own (it is what notifications and screen readers
 * show); `blocks` lay the same facts out in the channel.
 */
export function slackMessage(ctx: AlertContext): SlackMessage {
  const headline = headlineOf(ctx);
  // Critical categories first: they are what the reader must act on.
  const shown = ctx.changes.filter((c) => c.current > 0 || c.change === 'resolved');
  const lines = [
    ...shown.filter((c) => severityOf(c.category) === 'critical'),
    ...shown.filter((c) => severityOf(c.category) !== 'critical'),
  ].map((c) => categoryLine(c, ctx));
  const age = oldestAge(ctx);
  const oldest = age ? `Oldest open finding: ${age} old (evidence dated ${ctx.oldestOpenAt?.toISOString()})` : null;
  const command = reportCommand(ctx.account);
  const footer = `Run ${ctx.runId}`;

  const text = [
    headline,
    ...lines,
    ...(oldest ? [oldest] : []),
    ...(ctx.unreconciled > 0 ? [`Investigate: ${command}`] : []),
    footer,
  ].join('\n');

  const details = [...lines, ...(oldest ? [oldest] : [])].map(escape).join('\n');
  const blocks: Array<Record<string, unknown>> = [
    { type: 'section', text: { type: 'mrkdwn', text: `*${escape(headline)}*` } },
  ];
  if (details) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: details } });
  if (ctx.unreconciled > 0)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `Investigate: \`${escape(command)}\`` } });
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escape(footer) }] });
  return { text, blocks };
}

function headlineOf(ctx: AlertContext): string {
  if (ctx.unreconciled === 0 && ctx.lag?.lagging)
    return `sweeper: reconciliation of account ${ctx.account} is behind (no open findings, but recent changes are not checked yet)`;
  if (ctx.unreconciled === 0) return `sweeper: account ${ctx.account} is reconciled, no open findings`;
  const findings = ctx.changes.filter((c) => c.category !== LAG_ALERT);
  const critical = findings
    .filter((c) => c.current > 0 && severityOf(c.category) === 'critical')
    .reduce((n, c) => n + c.current, 0);
  const criticalNote = critical > 0 ? ` (${critical} critical)` : '';
  const lagNote = ctx.lag?.lagging ? '; reconciliation is behind' : '';
  return `sweeper: ${plural(ctx.unreconciled, 'unreconciled finding')} on account ${ctx.account}${criticalNote}${lagNote}`;
}

function categoryLine(c: CategoryChange, ctx: AlertContext): string {
  if (c.category === LAG_ALERT) {
    if (c.change === 'resolved') return '• reconciliation lag: caught up (resolved)';
    return `• reconciliation lag (critical${c.change === 'opened' ? ', new' : ''}): ${ctx.lag ? describeLag(ctx.lag) : 'behind'}; see \`sweeper status\``;
  }
  const notes: string[] = [];
  if (c.current > 0 && severityOf(c.category) === 'critical') notes.push('critical');
  if (c.change === 'opened') notes.push('new');
  if (c.change === 'increased') notes.push(`up from ${c.previous}`);
  if (c.change === 'decreased' || (c.change === 'repeat' && c.current < c.previous))
    notes.push(`down from ${c.previous}`);
  if (c.change === 'resolved') notes.push(`resolved, was ${c.previous}`);
  return `• ${c.category}: ${c.current}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`;
}

/** Slack's mrkdwn treats these three as control characters. */
function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
