import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge, ProviderEvidence } from './provider.js';
import { identityKey, type VerificationNeeds } from './judge/index.js';

/** What this run has re-read from Stripe itself (grows during the run; small: one entry per critical candidate). */
export interface VerifiedSoFar {
  chargeIds: Set<string>;
  identities: Set<string>;
  /** Charges Stripe answered but that cannot be read, by id: the problem. */
  unreadableCharges: Map<string, string>;
  /** Per identity searched (`identityKey()`): the ids of the unreadable charges the search returned. */
  unreadableNaming: Map<string, string[]>;
}

export function nothingVerifiedYet(): VerifiedSoFar {
  return { chargeIds: new Set(), identities: new Set(), unreadableCharges: new Map(), unreadableNaming: new Map() };
}

/** Re-reads at most this many at once: they are few, and all share the rate budget. */
const CONCURRENCY = 4;

/**
 * Reads what the judgement asked for from Stripe itself: charges by id, and every
 * charge naming a key (by search). Returns the charges found, for the mirror, and those
 * Stripe answered that cannot be read (each becomes a finding naming it, as in a
 * listing); the `verified` sets record what was asked, found or not, and which answers
 * were unreadable, so the next judgement of the slice can stand on it (an identity an
 * unreadable charge names is never released). A failing read fails the slice (fail
 * closed): nothing critical is raised and nothing released on an unanswered question.
 */
export async function readStripesWord(
  evidence: ProviderEvidence,
  needs: VerificationNeeds,
  verified: VerifiedSoFar,
  log: Logger,
  signal?: AbortSignal,
): Promise<{ found: NormalizedCharge[]; unreadable: MalformedCharge[] }> {
  const found: NormalizedCharge[] = [];
  const unreadable: MalformedCharge[] = [];
  const onUnreadable = (bad: MalformedCharge, naming?: string) => {
    unreadable.push(bad);
    if (bad.id === null) return;
    verified.unreadableCharges.set(bad.id, bad.problem);
    if (naming !== undefined)
      verified.unreadableNaming.set(naming, [...(verified.unreadableNaming.get(naming) ?? []), bad.id]);
  };
  const byAccount = new Map<string, Set<string>>();
  for (const { account, id } of needs.charges) {
    if (verified.chargeIds.has(id)) continue;
    if (!byAccount.has(account)) byAccount.set(account, new Set());
    byAccount.get(account)?.add(id);
  }
  const searches = new Map(
    needs.identities
      .map((n) => [identityKey(n.account, n.tenantId, n.key), n] as const)
      .filter(([id]) => !verified.identities.has(id)),
  );
  const tasks: Array<() => Promise<void>> = [];
  for (const [account, ids] of byAccount) {
    tasks.push(async () => {
      found.push(...(await evidence.chargesById(account, [...ids], signal, (bad) => onUnreadable(bad))));
      for (const id of ids) verified.chargeIds.add(id);
    });
  }
  for (const [id, need] of searches) {
    tasks.push(async () => {
      found.push(
        ...(await evidence.chargesNaming(need.account, need.tenantId, need.key, signal, (bad) =>
          onUnreadable(bad, id),
        )),
      );
      verified.identities.add(id);
    });
  }
  await runBounded(tasks, CONCURRENCY);
  if (tasks.length > 0) {
    log.info(
      {
        by_id: [...byAccount.values()].reduce((n, s) => n + s.size, 0),
        searched: searches.size,
        found: found.length,
        unreadable: unreadable.length,
      },
      "read Stripe's own word before a critical finding or a release",
    );
  }
  return {
    found: [...new Map(found.map((c) => [c.id, c])).values()],
    unreadable: [...new Map(unreadable.map((c) => [c.id ?? '', c])).values()],
  };
}

async function runBounded(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
