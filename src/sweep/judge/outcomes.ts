import type { ChargeFact } from '../facts.js';
import { chargeSummary, finding } from './build.js';
import { byCreated, isFullyRefunded, isMoney } from './evidence.js';
import type { Judgement } from './types.js';

/**
 * The outcome, not the mechanism (docs/judgement.md "Duplicate payments for one order"):
 * payments for one business reference under different keys, and payments without one by
 * the same customer or card moments apart. These findings are about the outcome only:
 * every charge they name keeps its own home among the key's findings (or `matched`).
 */

/** Every retained charge of one (account, tenant, reference), and the person-closed sets of it. */
export interface ReferenceGroup {
  account: string;
  /** '' for charges that name no tenant. */
  tenantId: string;
  reference: string;
  charges: ChargeFact[];
}

/** Charges of one set a person closed (duplicate_effect or suspected_duplicate): never raised again, nor a part. */
export type Verdicts = ReadonlyArray<ReadonlySet<string>>;

export interface OutcomeContext {
  duplicateLookbackMs: number;
  suspectWindowMs: number;
}

const live = (c: ChargeFact) => isMoney(c) && !isFullyRefunded(c);
/** The key a charge counts under: its own id when it names none (its own key). */
const keyOf = (c: ChargeFact) =>
  c.idempotencyKey === null ? `\u0000${c.id}` : `${c.tenantId ?? ''}\u001f${c.idempotencyKey}`;
const decided = (ids: readonly string[], verdicts: Verdicts) => verdicts.some((v) => ids.every((id) => v.has(id)));

/**
 * One reference's duplicates: its live money charges by amount and currency; per key, the
 * earliest (same-key extras are duplicate_charge's); then, oldest first, each group the
 * earliest charge left (kept) and those created within the lookback after it. A group of
 * two or more is a duplicate; all of a reference's groups make one finding.
 */
export function judgeReference(group: ReferenceGroup, verdicts: Verdicts, ctx: OutcomeContext, out: Judgement): void {
  const clusters: ChargeFact[][] = [];
  const bySum = new Map<string, ChargeFact[]>();
  for (const c of [...group.charges].filter(live).sort(byCreated)) {
    const sum = `${c.amount} ${c.currency}`;
    bySum.set(sum, [...(bySum.get(sum) ?? []), c]);
  }
  for (const charges of bySum.values()) {
    const firstPerKey = new Map<string, ChargeFact>();
    for (const c of charges) if (!firstPerKey.has(keyOf(c))) firstPerKey.set(keyOf(c), c);
    clusters.push(...anchored([...firstPerKey.values()].sort(byCreated), ctx.duplicateLookbackMs));
  }
  const duplicates = clusters.filter((c) => c.length > 1).sort((a, b) => byCreated(a[0]!, b[0]!));
  const ids = duplicates.flat().map((c) => c.id);
  if (duplicates.length === 0 || decided(ids, verdicts)) return;
  const [kept] = duplicates[0] as [ChargeFact];
  out.findings.push(
    finding({
      category: 'duplicate_effect',
      tenantId: group.tenantId === '' ? null : group.tenantId,
      key: null,
      charge: kept,
      subject: `${group.tenantId}\u241f${group.reference}\u241f${[...ids].sort().join(',')}`,
      reference: group.reference,
      members: ids,
      reason:
        'live payments for one reference under different keys: the customer paid more than once for it. ' +
        'Refund the extras (or resolve it --not-duplicate if they are meant)',
      details: {
        reference: group.reference,
        kept: kept.id,
        extras: duplicates.flatMap((c) => c.slice(1).map((x) => x.id)),
        groups: duplicates.map((c) => ({ kept: c[0]!.id, extras: c.slice(1).map((x) => x.id) })),
        charges: duplicates.flat().map(chargeSummary),
        count: ids.length,
      },
      covers: {},
    }),
  );
}

/** Oldest first: the earliest charge left and every one within `spanMs` after it, then again. */
function anchored(charges: ChargeFact[], spanMs: number): ChargeFact[][] {
  const groups: ChargeFact[][] = [];
  for (const c of charges) {
    const group = groups.at(-1);
    if (group && c.created.getTime() - group[0]!.created.getTime() <= spanMs) group.push(c);
    else groups.push([c]);
  }
  return groups;
}

/**
 * Live money charges without a reference, of one account: those sharing a customer or a
 * card fingerprint, the amount and the currency, under different keys, created within the
 * window of each other (and so on, transitively), are one suspected duplicate.
 */
export function judgeSuspects(
  charges: readonly ChargeFact[],
  verdicts: Verdicts,
  ctx: OutcomeContext,
  out: Judgement,
): void {
  if (ctx.suspectWindowMs <= 0) return;
  for (const set of suspectSets(charges, ctx.suspectWindowMs)) {
    const ids = set.map((c) => c.id);
    if (decided(ids, verdicts)) continue;
    const [kept] = set as [ChargeFact];
    out.findings.push(
      finding({
        category: 'suspected_duplicate',
        tenantId: kept.tenantId,
        key: null,
        charge: kept,
        subject: `suspect\u241f${[...ids].sort().join(',')}`,
        members: ids,
        reason:
          'payments without a reference by one customer or card, for the same amount, moments apart, under different keys: ' +
          'perhaps one purchase paid twice, perhaps two purchases. Refund, or resolve it --not-duplicate',
        details: { kept: kept.id, extras: ids.slice(1), charges: set.map(chargeSummary), count: ids.length },
        covers: {},
      }),
    );
  }
}

/** The sets of suspected duplicates among `charges`, each oldest first, each with two keys or more. */
export function suspectSets(charges: readonly ChargeFact[], windowMs: number): ChargeFact[][] {
  const candidates = charges.filter((c) => live(c) && !c.reference && (c.customer || c.cardFingerprint));
  const sorted = [...candidates].sort(byCreated);
  const parent = sorted.map((_, i) => i);
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i]!)));
  for (let i = 0; i < sorted.length; i += 1) {
    for (let j = i + 1; j < sorted.length; j += 1) {
      const a = sorted[i]!;
      const b = sorted[j]!;
      if (b.created.getTime() - a.created.getTime() > windowMs) break;
      const sameBuyer =
        (a.customer !== null && a.customer === b.customer) ||
        (Boolean(a.cardFingerprint) && a.cardFingerprint === b.cardFingerprint);
      if (sameBuyer && a.amount === b.amount && a.currency === b.currency && a.account === b.account)
        parent[root(j)] = root(i);
    }
  }
  const sets = new Map<number, ChargeFact[]>();
  sorted.forEach((c, i) => sets.set(root(i), [...(sets.get(root(i)) ?? []), c]));
  return [...sets.values()].filter((set) => new Set(set.map(keyOf)).size > 1);
}
