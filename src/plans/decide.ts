import { claimKey } from '../domain/identity.js';
import { objectKey } from './evidence.js';
import type { EvidenceEntry, PlanStep } from './format.js';
import type { StepState } from './store.js';

/**
 * What an apply does with one step (docs/plans.md "When a step is applied"), as a pure
 * function of what it knows: the plan's approval, the states of the steps before it, and
 * the current version of each object the step read.
 */

/** Stripe answered the charge, but not in a form that can be judged: never equal to a version. */
export const UNREADABLE = 'unreadable';

export interface StepView {
  now: Date;
  planId: string;
  author: string;
  approved: boolean;
  /** Whether charges are judged on Stripe's own word now (else on the mirror's: a step that needs Stripe waits). */
  stripesWord: boolean;
  /** A step's state so far, with what this apply already decided. */
  stateOf(step: number): StepState;
  /**
   * The object's version now: null when it does not exist, UNREADABLE when Stripe's
   * answer cannot be read, undefined when nothing newer than the plan's own read is known
   * (a charge, applied without Stripe's word, that no sweep has read since the plan).
   */
  current(entry: EvidenceEntry): string | null | undefined;
  /** A release: the charges naming its key now (none when the plan released it). */
  namingNow(step: PlanStep): readonly string[];
}

export type Verdict =
  | { kind: 'apply' }
  /** Never applied: the evidence moved (or the time to do it safely passed). */
  | { kind: 'refuse'; reason: string }
  /** Left as planned, for a later apply: an approval, or an earlier step, is missing. */
  | { kind: 'pending'; reason: string };

export function stepVerdict(step: PlanStep, view: StepView): Verdict {
  if (step.moves_money && !view.approved) {
    return {
      kind: 'pending',
      reason:
        `it moves money and awaits approval by someone other than ${view.author} ` +
        `(sweeper approve ${view.planId} --by NAME)`,
    };
  }
  if (needsStripe(step) && !view.stripesWord) {
    return {
      kind: 'pending',
      reason:
        "a release or a refund is applied only on Stripe's own word, read as it is applied: " +
        'sweeper apply FILE, or the review page with STRIPE_API_KEY',
    };
  }
  const waiting = dependencies(step, view);
  if (waiting) return waiting;
  if (step.release_by !== undefined && view.now.getTime() >= Date.parse(step.release_by)) {
    return {
      kind: 'refuse',
      reason:
        "the claim is now older than Stripe's idempotency window: a retry could charge twice, so it is no longer released",
    };
  }
  const moved = step.evidence.flatMap((e) => {
    if (e.after_step !== undefined) return [];
    const now = view.current(e);
    return now === undefined || now === (e.version ?? null) ? [] : [movement(e, now)];
  });
  const naming = step.kind === 'release_claim' ? view.namingNow(step) : [];
  if (naming.length > 0) moved.push(`${naming.join(', ')} now name${naming.length === 1 ? 's' : ''} the key at Stripe`);
  if (moved.length > 0) return { kind: 'refuse', reason: `its evidence moved since the plan: ${moved.join('; ')}` };
  return { kind: 'apply' };
}

/** Before a step that can move money (a release, a refund) the evidence is re-read from Stripe (DESIGN.md §3). */
function needsStripe(step: PlanStep): boolean {
  return step.moves_money || step.kind === 'release_claim';
}

/** A step that read what an earlier step writes waits for it, and is refused with it. */
function dependencies(step: PlanStep, view: StepView): Verdict | null {
  const earlier = [...new Set(step.evidence.flatMap((e) => (e.after_step === undefined ? [] : [e.after_step])))];
  const refused = earlier.filter((n) => view.stateOf(n) === 'refused');
  if (refused.length > 0) {
    return { kind: 'refuse', reason: `it reads what step ${refused.join(', ')} would have written, which was refused` };
  }
  const open = earlier.filter((n) => view.stateOf(n) === 'planned');
  if (open.length > 0) return { kind: 'pending', reason: `it waits for step ${open.join(', ')}` };
  return null;
}

/** One moved object, in words: what it is and how it moved. */
export function movement(entry: EvidenceEntry, now: string | null): string {
  const what = {
    claim: `claim ${entry.id}`,
    payment: `the payment row of ${entry.id}`,
    charge: `charge ${entry.id}`,
    refund_intent: `the refund outbox row of ${entry.id}`,
    payment_refund: `the refund row of ${entry.id}`,
    refund: `refund ${entry.id}`,
  }[entry.object];
  const atStripe = entry.object === 'charge' || entry.object === 'refund';
  const before = entry.version ?? null;
  if (now === UNREADABLE) return `${what} cannot be read at Stripe now`;
  if (before === null) return `${what} exists now`;
  if (now === null) return atStripe ? `${what} is no longer at Stripe` : `${what} is gone`;
  return atStripe ? `${what} changed at Stripe` : `${what} changed`;
}

/** The key of an entry's object in the maps of current versions (evidence.ts `objectKey`). */
export function entryKey(entry: EvidenceEntry): string {
  if (entry.object === 'claim') return objectKey('claim', claimKey(entry.tenant_id ?? '', entry.key ?? ''));
  return objectKey(entry.object, entry.id);
}
