import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { loadConfig, requireStripeApiKey } from '../../config.js';
import {
  applyExitCode,
  applyPlan,
  approvePlan,
  planOfFile,
  PLAN_ID_PATTERN,
  readPlanFile,
  type ApplyReport,
  type StepReport,
} from '../../plans/index.js';
import { redact } from '../../secrets.js';
import { terminalSafe } from '../../terminal-text.js';
import { actorName, stripeProviderFor, UsageError, withDatabase, writeJson } from '../context.js';
import { writeErrorLine } from '../exit.js';

/**
 * `sweeper apply FILE` and `sweeper approve PLAN_ID` (docs/plans.md): the saved plan's
 * second half. Thin: the rules are src/plans/'s.
 */
export function registerPlanCommands(program: Command): void {
  program
    .command('apply <file>')
    .description(
      'apply a saved plan (sweeper run --plan FILE): each step whose evidence is unchanged; names each step refused',
    )
    .option('--by <name>', 'who applies it (default SWEEPER_ACTOR, else the OS user)')
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      `
Example:
  sweeper run --plan plan.json && sweeper apply plan.json --by alice

A step that moves money (a refund) is applied only once someone other than the plan's
author approved it (sweeper approve PLAN_ID --by NAME). A second apply applies nothing.
Exit codes: 0 every step applied, 3 a step refused or waiting or findings open,
65 not a plan this database made (or an altered one), 1 failure, 64 bad usage.`,
    )
    .action(async (file: string, flags: { by?: string; json?: boolean }) => {
      const actor = actorName(flags.by);
      const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
        throw new UsageError(
          `${file}: cannot read it (${error.code ?? error.message}); give the plan file --plan wrote`,
        );
      });
      const parsed = readPlanFile(text, file);
      const config = loadConfig();
      const provider = stripeProviderFor(config, requireStripeApiKey(config));
      process.exitCode = await withDatabase(async ({ pool, logger }) => {
        const plan = await planOfFile(pool, parsed, file);
        const report = await applyPlan(
          { pool, clock: () => new Date(), logger, evidence: provider.evidence },
          { planId: plan.id, actor },
        );
        if (flags.json) writeJson(report);
        else process.stdout.write(terminalSafe(redact(formatApply(report))));
        const code = applyExitCode(report);
        if (code !== 0) writeErrorLine(applyReason(report));
        return code;
      }, config);
    });

  program
    .command('approve <plan-id>')
    .description("approve a plan's refunds: the second person of four eyes on money (never the plan's author)")
    .option('--by <name>', 'who approves (default SWEEPER_ACTOR, else the OS user); not the author')
    .addHelpText(
      'after',
      `
Example:
  sweeper approve plan_20261201T041500Z_3fa9c2d1 --by bob

Exit codes: 0 approved (or approved already), 65 no such plan in this database,
77 the approver is the plan's author, 64 bad usage.`,
    )
    .action(async (planId: string, flags: { by?: string }) => {
      if (!PLAN_ID_PATTERN.test(planId))
        throw new UsageError(`${planId}: expected a plan id such as plan_20261201T041500Z_3fa9c2d1`);
      const actor = actorName(flags.by);
      await withDatabase(async ({ pool, logger }) => {
        const approval = await approvePlan(pool, { planId, actor, now: new Date() });
        logger.info({ plan: planId, actor, outcome: approval.outcome }, 'plan approval');
        process.stdout.write(
          approval.outcome !== 'approved'
            ? `plan ${planId} was already approved by ${approval.approvedBy} at ${approval.approvedAt.toISOString()}\n`
            : approval.moneySteps === 0
              ? `plan ${planId} approved by ${actor}; no step of it moves money, so it needed no approval\n`
              : `plan ${planId} approved by ${actor}: its ${approval.moneySteps} step(s) moving money are applied by the next sweeper apply\n`,
        );
      });
    });
}

const line = (s: StepReport) =>
  `  step ${s.step}  ${s.account}  ${s.category}  ${s.subject.replace('\u241f', '/')}  ${s.action}${s.reason ? `: ${s.reason}` : ''}`;

/** What a person reads after an apply: what was applied, refused and left, and what is open. */
export function formatApply(r: ApplyReport): string {
  const out = [
    `apply ${r.plan_id} by ${r.actor}  (charges checked against ${r.stripes_word ? 'Stripe' : 'the mirror'})`,
    `applied now: ${r.applied.length}`,
    ...r.applied.map(line),
  ];
  if (r.refused.length > 0)
    out.push(`refused (the evidence moved; never applied): ${r.refused.length}`, ...r.refused.map(line));
  if (r.pending.length > 0) out.push(`left for a later apply: ${r.pending.length}`, ...r.pending.map(line));
  if (r.earlier.applied > 0 || r.earlier.refused.length > 0)
    out.push(`decided by an earlier apply: ${r.earlier.applied} applied, ${r.earlier.refused.length} refused`);
  out.push(...r.earlier.refused.map(line));
  if (r.refunds.made + r.refunds.cancelled + r.refunds.left > 0)
    out.push(
      `refunds: ${r.refunds.made} made, ${r.refunds.cancelled} cancelled, ${r.refunds.left} left for the next run`,
    );
  out.push(`open findings on the plan's accounts: ${r.open_findings}`);
  return `${out.join('\n')}\n`;
}

/** The one `sweeper: …` line of an apply that exits 3. */
export function applyReason(r: ApplyReport): string {
  const parts: string[] = [];
  const refused = r.refused.length + r.earlier.refused.length;
  if (refused > 0) parts.push(`${refused} step(s) refused because their evidence moved (make a new plan for them)`);
  const approval = r.pending.filter((s) => s.moves_money && /approval/.test(s.reason ?? ''));
  if (approval.length > 0)
    parts.push(
      `${approval.length} step(s) moving money await approval by someone other than the author: sweeper approve ${r.plan_id} --by NAME, then apply again`,
    );
  const waiting = r.pending.length - approval.length;
  if (waiting > 0) parts.push(`${waiting} step(s) wait for another step`);
  if (r.open_findings > 0)
    parts.push(`${r.open_findings} finding(s) open on the plan's accounts (sweeper report --status open)`);
  return parts.join('; ');
}
