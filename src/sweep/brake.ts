import type { Category } from './categories.js';
import { ExitCode } from '../exit-codes.js';

/**
 * The repair brake (docs/judgement.md "The repair brake"): many repairs of one kind in
 * one run are almost always a configuration problem (a stored-answer shape, a metadata
 * name, a clock), not many incidents. Before each batch repairs, the run's repairs of
 * each category so far plus the batch's are compared with what the run judged so far;
 * past the bound, the batch repairs nothing and the account's run stops.
 */

/** Below this many repairs of one category in a run, the brake never trips. */
export const BRAKE_FLOOR = 50;

/** What one account's run has judged and repaired so far (every batch: slices, events, deep re-read). */
export interface BrakeState {
  judged: number;
  repairs: Partial<Record<Category, number>>;
}

export interface BrakeTrip {
  category: Category;
  /** Repairs of the category the run would have made by the end of this batch. */
  repairs: number;
  judged: number;
  share: number;
}

export function newBrakeState(): BrakeState {
  return { judged: 0, repairs: {} };
}

/**
 * Whether repairing `planned` (a batch's repairs by category, over `judged` identities)
 * takes some category past the bound: at least BRAKE_FLOOR repairs and more than `share`
 * of every identity the run judged. The first such category (most repairs first).
 */
export function brakeTrip(
  state: BrakeState,
  planned: Partial<Record<Category, number>>,
  judged: number,
  share: number,
): BrakeTrip | null {
  const total = state.judged + judged;
  const trips = (Object.entries(planned) as Array<[Category, number]>)
    .map(([category, n]) => ({ category, repairs: (state.repairs[category] ?? 0) + n, judged: total, share }))
    .filter((t) => t.repairs >= BRAKE_FLOOR && t.repairs > share * total)
    .sort((a, b) => b.repairs - a.repairs || a.category.localeCompare(b.category));
  return trips[0] ?? null;
}

/** Adds a batch that went ahead to the run's counts. */
export function recordBatch(state: BrakeState, planned: Partial<Record<Category, number>>, judged: number): void {
  state.judged += judged;
  for (const [category, n] of Object.entries(planned) as Array<[Category, number]>)
    state.repairs[category] = (state.repairs[category] ?? 0) + n;
}

/** The account's run stopped before a batch's repairs: exit 1, one line saying why and how to look. */
export class MassRepairError extends Error {
  override readonly name = 'MassRepairError';
  readonly exitCode = ExitCode.failed;
  constructor(
    readonly trip: BrakeTrip,
    account: string,
  ) {
    super(
      `the repair brake stopped account ${account} before repairing: ${trip.repairs} ${trip.category} repairs of ` +
        `${trip.judged} identities judged (${percent(trip.repairs / trip.judged)}, more than SWEEPER_MAX_REPAIR_SHARE ` +
        `${percent(trip.share)}). So many of one kind usually mean a configuration problem (a stored-answer shape: ` +
        `SWEEPER_STORED_ANSWER; the metadata names: SWEEPER_METADATA_*; a clock), not as many incidents. Look first: ` +
        `the same command with --dry-run, then sweeper report --status open --category ${trip.category}; ` +
        `if the repairs are right, run again with --allow-mass-repair`,
    );
  }
}

function percent(fraction: number): string {
  const p = Math.round(fraction * 1000) / 10;
  return `${p}%`;
}
