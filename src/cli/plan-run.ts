import { rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { makePlan, planFileText } from '../plans/index.js';
import type { SweepDeps, SweepOptions, SweepReport } from '../sweep/sweep.js';
import { UsageError } from './context.js';

/**
 * `run|backfill --plan FILE`: the sweep as a dry run whose steps are kept (src/plans), the
 * plan saved in the database and written to FILE. The reports are the dry run's, each
 * with the plan it went into (`plan` in --json).
 */
export interface PlanTarget {
  file: string;
  author: string;
  /** --json: the plan is named in each report's JSON only, stdout holding nothing else. */
  json: boolean;
}

/** FILE must be a file that can be written: checked before the run, so a typo costs nothing. */
export async function assertPlanTarget(file: string): Promise<void> {
  if (file.endsWith('/') || (await stat(file).catch(() => null))?.isDirectory())
    throw new UsageError(
      `--plan ${file} is a directory: give the file to write, e.g. --plan ${path.join(file, 'plan.json')}`,
    );
  const dir = await stat(path.dirname(path.resolve(file))).catch(() => null);
  if (!dir?.isDirectory()) throw new UsageError(`--plan ${file}: the directory ${path.dirname(file)} does not exist`);
}

export async function planRun(deps: SweepDeps, options: SweepOptions, target: PlanTarget): Promise<SweepReport[]> {
  const { body, reports } = await makePlan(deps, options, { author: target.author, now: new Date() });
  // Beside the target and renamed: a reader never sees half a plan.
  const temp = `${target.file}.tmp-${process.pid}`;
  try {
    await writeFile(temp, planFileText(body));
    await rename(temp, target.file);
  } catch (error) {
    await rm(temp, { force: true });
    throw new Error(
      `plan ${body.id} is saved in the database but ${target.file} could not be written (${(error as Error).message}): ` +
        'it can be reviewed, approved and applied on the review page',
    );
  }
  const money = body.steps.filter((s) => s.moves_money).length;
  const plan = { id: body.id, file: target.file, steps: body.steps.length, money_steps: money, author: body.author };
  deps.logger.info(plan, 'plan written');
  if (!target.json)
    process.stdout.write(
      `plan ${body.id} by ${body.author}: ${body.steps.length} step(s)${money > 0 ? `, ${money} moving money` : ''}, written to ${target.file}\n` +
        `  apply it: sweeper apply ${target.file}` +
        (money > 0 ? `   (refunds need a second person first: sweeper approve ${body.id} --by NAME)` : '') +
        '\n\n',
    );
  return reports.map((r) => Object.assign(r, { plan }));
}
