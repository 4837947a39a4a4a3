import type { ChargeFact } from '../facts.js';
import { chargeSummary, finding } from './build.js';
import type { Evidence } from './evidence.js';
import type { JudgeContext, Judgement } from './types.js';

/**
 * Two or more money charges not refunded in full for one identity: `duplicate_charge`.
 * The kept charge is the earliest that matches the request (see `keptCharge`) and is
 * judged as the key's only charge elsewhere; this finding accounts for the extras.
 * `--refund-duplicates` refunds only extras identical to the kept charge (amount,
 * currency, customer, payment method), captured, not disputed and not refunded at all;
 * anything else stays open for a person.
 */
export function judgeDuplicates(
  ids: { tenantId: string; key: string },
  evidence: Evidence,
  kept: ChargeFact | null,
  /** Extras whose payment row has a finding of its own: that finding accounts for them. */
  homedElsewhere: ReadonlySet<string>,
  ctx: JudgeContext,
  out: Judgement,
): void {
  if (evidence.live.length < 2) return;
  const extras = evidence.live.filter((c) => c.id !== kept?.id);
  const refundable: ChargeFact[] = [];
  const notRefundable: Array<{ id: string; why: string }> = [];
  for (const extra of extras) {
    const why = kept
      ? whyNotRefundable(extra, kept)
      : 'no charge matches the request, so none is known to be the one to keep';
    if (why) notRefundable.push({ id: extra.id, why });
    else refundable.push(extra);
  }
  const reasons: string[] = [];
  if (!kept) reasons.push("no charge matches the claim's request: a person decides which one to keep");
  if (notRefundable.length > 0 && kept)
    reasons.push(`${notRefundable.length} extra charge(s) differ from the kept one: a person decides`);
  if (!ctx.refundDuplicates && refundable.length > 0) reasons.push('refunds only with --refund-duplicates');
  const extraEffects = evidence.effects.filter(
    (e) => extras.some((c) => c.id === e.chargeId) && !homedElsewhere.has(e.chargeId),
  );
  out.findings.push(
    finding({
      category: 'duplicate_charge',
      ...ids,
      charge: kept,
      repair:
        ctx.refundDuplicates && kept && refundable.length > 0
          ? { kind: 'refund_duplicates', keep: kept, refund: refundable }
          : null,
      ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}),
      details: {
        charges: evidence.live.map(chargeSummary),
        count: evidence.live.length,
        kept: kept?.id ?? null,
        refundable: refundable.map((c) => c.id),
        not_refundable: notRefundable,
      },
      covers: {
        charges: extras.map((c) => c.id).filter((id) => !homedElsewhere.has(id)),
        effects: extraEffects.map((e) => e.chargeId),
      },
    }),
  );
  for (const c of evidence.live) out.judgedSubjects.push(c.id);
}

/** Why an extra may not be refunded automatically; null when it may. */
export function whyNotRefundable(extra: ChargeFact, kept: ChargeFact): string | null {
  if (extra.id === kept.id) return 'it is the kept charge';
  if (extra.amount !== kept.amount || extra.currency !== kept.currency)
    return 'amount or currency differ from the kept charge';
  if (extra.customer !== kept.customer) return 'customer differs from the kept charge';
  if (extra.paymentMethod !== kept.paymentMethod) return 'payment method differs from the kept charge';
  if (extra.status !== 'succeeded' || !extra.captured) return 'not a captured, succeeded charge';
  if (extra.disputed) return 'disputed: the dispute decides';
  if (extra.amountRefunded > 0) return 'already partly refunded';
  return null;
}
