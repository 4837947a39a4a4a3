import type { ChargeFact, ClaimFact } from '../facts.js';
import { chargeSummary, claimSummary, finding, versionOf } from './build.js';
import { identityKey } from '../../domain/identity.js';
import { keptCharge, latest, matchesRequest, requestOf, storedAnswer, type Request } from './evidence.js';
import { effectOf, unhomed, unhomedEffect, type IdentityScope } from './scope.js';

/**
 * A settled claim on the swept account, judged by the key's charges in that account:
 * 1. a money charge matching the request (the kept one): the claim must be completed
 *    with a success and the charge recorded → else `claim_without_effect`, repaired;
 * 2. money charges, none matching the request → `amount_mismatch`, nothing repaired
 *    (a claim is never completed from, nor released beside, a charge that names it);
 * 3. no money charge: a declined charge matching the request stores the decline on an
 *    in-flight claim (`claim_without_effect`); no charge at all → `stale_claim`
 *    (released while Stripe still remembers the downstream key, after Stripe's own
 *    search found nothing); a completed claim whose answer says success →
 *    `lost_effect`, raised only after Stripe's own search and lookup found nothing.
 */
export function judgeClaimed(scope: IdentityScope, claim: ClaimFact): void {
  const request = requestOf(claim);
  const kept = keptCharge(scope.evidence, request);
  if (kept) return judgeKept(scope, claim, request, kept);
  if (scope.evidence.money.length > 0) return judgeMismatched(scope, claim, request as Request);
  return judgeWithoutMoney(scope, claim, request);
}

function judgeKept(scope: IdentityScope, claim: ClaimFact, request: Request | null, kept: ChargeFact): void {
  const effect = effectOf(scope, kept);
  const answer = storedAnswer(claim);
  if (answer === 'success' && effect) return; // nothing to do: the charge is matched when its row agrees
  const covers = { claims: [scope.subject], charges: unhomed(scope, [kept]), effects: unhomedEffect(scope, kept) };
  // A claim that records no request is repaired from a charge only when that charge
  // is the only one naming the key: otherwise nothing says which one it stands for.
  const reason =
    request === null && scope.evidence.money.length > 1
      ? 'the claim records no request and more than one charge names the key: a person decides'
      : !effect && kept.recordedIn
        ? `the charge's payment row is recorded under account ${kept.recordedIn}: a person moves it`
        : answer === 'failure'
          ? `the stored answer says the request failed (HTTP ${claim.responseStatus ?? '?'}), but Stripe took the money: ` +
            'the answer its caller was given is not rewritten; a person decides (refund the charge, or record it)'
          : undefined;
  // A stored success stays byte for byte: its caller was told so, and retries replay it.
  // Only the missing payment row is added.
  const keepAnswer = answer === 'success';
  scope.out.findings.push(
    finding({
      category: 'claim_without_effect',
      ...scope.ids,
      charge: kept,
      repair: reason
        ? null
        : { kind: 'complete_claim', claim: versionOf(claim), charge: kept, insertEffect: !effect, keepAnswer },
      ...(reason ? { reason } : {}),
      details: { claim: claimSummary(claim), charge: chargeSummary(kept) },
      covers,
    }),
  );
}

function judgeMismatched(scope: IdentityScope, claim: ClaimFact, request: Request): void {
  // Charges the duplicate finding is about (no kept charge: all live ones) are not reported
  // twice, also one whose payment row's finding covers it: which charges get a finding here
  // must not depend on whether that row has been repaired yet.
  const duplicate = scope.out.findings.find((f) => f.category === 'duplicate_charge');
  const elsewhere = new Set(duplicate ? scope.evidence.live.map((c) => c.id) : []);
  let claimCovered = false;
  if (
    duplicate &&
    scope.evidence.money.every((c) => elsewhere.has(c.id) || scope.pairs.get(c.id) === 'amount_mismatch')
  ) {
    duplicate.covers.claims.push(scope.subject);
    claimCovered = true;
  }
  for (const charge of scope.evidence.money) {
    if (elsewhere.has(charge.id)) continue;
    // The first finding also accounts for the claim, which none of these charges may repair.
    const claims = claimCovered ? [] : [scope.subject];
    claimCovered = true;
    if (scope.pairs.get(charge.id) === 'amount_mismatch') {
      // Its payment row's finding already says so: one finding per charge.
      const existing = scope.out.findings.find((f) => f.category === 'amount_mismatch' && f.subject === charge.id);
      existing?.covers.claims.push(...claims);
      continue;
    }
    scope.out.findings.push(
      finding({
        category: 'amount_mismatch',
        ...scope.ids,
        charge,
        reason: `the charge does not match the claim's request (${request.amount} ${request.currency}): the claim is left as it is`,
        details: { claim: claimSummary(claim), charge: chargeSummary(charge) },
        covers: { claims, charges: unhomed(scope, [charge]), effects: unhomedEffect(scope, charge) },
      }),
    );
  }
}

function judgeWithoutMoney(scope: IdentityScope, claim: ClaimFact, request: Request | null): void {
  const { ctx, out, evidence } = scope;
  const declines = evidence.failed.filter((c) => matchesRequest(c, request));
  if (claim.status === 'released') return; // the caller's retry re-drives it with the same downstream key
  if (claim.status === 'completed') {
    if (storedAnswer(claim) !== 'success') return; // a stored failure or a pending action, and no money: agreed
    // A payment row records the money Stripe never took: `effect_without_charge` tells that story, claim included.
    const ghost = scope.out.findings.find(
      (f) => f.category === 'effect_without_charge' && evidence.effects.some((e) => e.chargeId === f.subject),
    );
    if (ghost) {
      ghost.covers.claims.push(scope.subject);
      return;
    }
    if (!verified(scope, claim) || unreadableNaming(scope, claim)) return;
    out.findings.push(
      finding({
        category: 'lost_effect',
        ...scope.ids,
        charge: null,
        reason:
          'the stored answer says success, but Stripe has no succeeded charge for the key (searched, and looked up by id)',
        details: { claim: claimSummary(claim), declined: declines.map(chargeSummary) },
        covers: { claims: [scope.subject] },
      }),
    );
    return;
  }
  // In flight, lease expired.
  if (declines.length > 0) {
    const ambiguous = request === null && declines.length > 1;
    const decline = latest(declines) as ChargeFact;
    out.findings.push(
      finding({
        category: 'claim_without_effect',
        ...scope.ids,
        charge: decline,
        repair: ambiguous
          ? null
          : {
              kind: 'complete_claim',
              claim: versionOf(claim),
              charge: decline,
              // A row recorded under another account holds the charge id: none can be added here.
              insertEffect: !effectOf(scope, decline) && !decline.recordedIn,
              keepAnswer: false,
            },
        ...(ambiguous
          ? { reason: 'the claim records no request and more than one declined charge names the key: a person decides' }
          : {}),
        details: { claim: claimSummary(claim), charge: chargeSummary(decline) },
        covers: { claims: [scope.subject], charges: unhomed(scope, [decline]), effects: unhomedEffect(scope, decline) },
      }),
    );
    return;
  }
  const age = ctx.now.getTime() - claim.createdAt.getTime();
  const releasable = age < ctx.providerIdempotencyWindowMs;
  // Releasing lets the caller's retry charge: Stripe's own search must have found nothing first.
  if (releasable && (!verified(scope, claim) || unreadableNaming(scope, claim))) return;
  out.findings.push(
    finding({
      category: 'stale_claim',
      ...scope.ids,
      charge: null,
      repair: releasable ? { kind: 'release_claim', claim: versionOf(claim) } : null,
      ...(releasable
        ? {}
        : {
            reason:
              "claim is older than Stripe's 24 h idempotency window: a retry now could charge twice, so it is not released",
          }),
      details: { claim: claimSummary(claim) },
      covers: { claims: [scope.subject] },
    }),
  );
}

/**
 * Stripe's own word on a key before a critical finding or a release: its charges
 * searched by metadata, and the charge its stored answer names looked up by id.
 * Until both were read this run, the key is deferred and the reads requested.
 */
function verified(scope: IdentityScope, claim: ClaimFact): boolean {
  const { account } = scope.facts;
  const { verified: done } = scope.ctx;
  let ok = true;
  if (!done.identities.has(identityKey(account, scope.ids.tenantId, scope.ids.key))) {
    scope.out.needs.identities.push({ account, ...scope.ids });
    ok = false;
  }
  if (claim.responseChargeId && !done.chargeIds.has(claim.responseChargeId)) {
    scope.out.needs.charges.push({ account, id: claim.responseChargeId });
    ok = false;
  }
  if (!ok) scope.out.deferred.push(scope.subject);
  return ok;
}

/**
 * Stripe's own word named the key, but with a charge the sweep cannot read (the search's
 * answer, or the charge the stored answer names): that charge may be this key's money, so
 * the claim is neither released nor reported lost. An open `claim_without_effect` says why
 * (each unreadable charge has its own finding); returns whether it was raised.
 */
function unreadableNaming(scope: IdentityScope, claim: ClaimFact): boolean {
  const { verified: done } = scope.ctx;
  const ids = [
    ...(done.unreadableNaming.get(identityKey(scope.facts.account, scope.ids.tenantId, scope.ids.key)) ?? []),
  ];
  if (claim.responseChargeId && done.unreadableCharges.has(claim.responseChargeId)) ids.push(claim.responseChargeId);
  const unreadable = [...new Set(ids)].sort();
  if (unreadable.length === 0) return false;
  scope.out.findings.push(
    finding({
      category: 'claim_without_effect',
      ...scope.ids,
      charge: null,
      reason:
        `Stripe holds ${unreadable.length === 1 ? 'a charge' : 'charges'} naming this key that the sweep cannot read ` +
        `(${unreadable.join(', ')}): the claim is not released nor reported lost; see the charge's own finding`,
      details: {
        claim: claimSummary(claim),
        unreadable: unreadable.map((id) => ({ id, problem: done.unreadableCharges.get(id) ?? null })),
      },
      covers: { claims: [scope.subject] },
    }),
  );
  return true;
}
