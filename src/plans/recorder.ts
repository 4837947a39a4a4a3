import type { Queryable } from '../db/pool.js';
import { claimKey, identityKey } from '../domain/identity.js';
import type { IdentityFacts } from '../sweep/facts.js';
import type { Finding, RepairPlan } from '../sweep/judge/index.js';
import { refundIdempotencyKey } from '../sweep/refunds.js';
import type { BatchPlanner, PlannedBatch } from '../sweep/run-mode.js';
import {
  chargeVersion,
  claimObjectId,
  refundVersion,
  evidenceOf,
  identitiesOf,
  movesMoney,
  objectKey,
  writesOf,
  type EvidenceRefs,
} from './evidence.js';
import { findingToJson, type EvidenceEntry, type PlannedRefund, type PlanStep } from './format.js';
import { claimVersions, intentVersions, paymentVersions, refundRowVersions } from './versions.js';

type Step = Finding & { repair: RepairPlan };

/**
 * The plan run's recorder (the sweep's BatchPlanner): for each batch that stands, the
 * repairs and refunds it would make, in the order a real run makes them, each with the
 * version of every object it read. An object an earlier step of the plan writes is not
 * versioned again: the later step read what the earlier one would leave, so it names that
 * step instead (`after_step`), as a real run's later batch reads what the earlier committed.
 */
export class PlanRecorder implements BatchPlanner {
  readonly steps: PlanStep[] = [];

  /** `idempotencyWindowMs`: the provider's (SweepDeps): a claim is released only inside it. */
  constructor(private readonly options: { idempotencyWindowMs: number }) {}

  private batches = 0;
  /** Which step of the plan last writes each object (`objectKey()`). */
  private readonly writtenBy = new Map<string, number>();

  async read(db: Queryable, batch: PlannedBatch): Promise<() => void> {
    const steps = [...new Set([...batch.repairs.keys(), ...batch.refunds])].filter((f): f is Step => f.repair !== null);
    if (steps.length === 0) return () => undefined;
    const identities = batch.facts ? identitiesOf(batch.facts) : new Map<string, IdentityFacts>();
    const refs = steps.map((f) => evidenceOf(f, batch.account, identities));
    const versions = await this.readVersions(db, refs);
    return () => {
      this.batches += 1;
      const drafts = steps.map((f, i) =>
        this.draft(batch, identities, f, this.steps.length + 1 + i, refs[i] as EvidenceRefs, versions),
      );
      // Only once every step of the batch is drafted: a batch's repairs never read each other's.
      for (const [i, f] of steps.entries()) {
        const step = drafts[i] as PlanStep;
        this.steps.push(step);
        for (const object of writesOf(f.repair)) this.writtenBy.set(object, step.step);
      }
    };
  }

  /** The rows' versions as judged, of every object no earlier step writes: four statements for the batch. */
  private async readVersions(db: Queryable, refs: EvidenceRefs[]): Promise<Versions> {
    const fresh = (object: 'claim' | 'payment' | 'refund_intent' | 'payment_refund', id: string) =>
      !this.writtenBy.has(objectKey(object, id));
    const claims = refs.flatMap((r) => r.claims).filter((c) => fresh('claim', claimKey(c.tenantId, c.key)));
    // One connection (the batch's transaction): one statement after the other.
    const claim = await claimVersions(db, claims);
    const payment = await paymentVersions(
      db,
      refs.flatMap((r) => r.payments).filter((id) => fresh('payment', id)),
    );
    const intent = await intentVersions(
      db,
      refs.flatMap((r) => r.intents).filter((id) => fresh('refund_intent', id)),
    );
    const refundRow = await refundRowVersions(
      db,
      refs.flatMap((r) => r.refundRows).filter((id) => fresh('payment_refund', id)),
    );
    return { claim, payment, intent, refundRow };
  }

  /**
   * A release must happen while a retry would still meet Stripe's idempotency window
   * (docs/judgement.md): the instant after which an apply refuses it.
   */
  private releaseBy(finding: Step, batch: PlannedBatch, identities: ReadonlyMap<string, IdentityFacts>): string | null {
    if (finding.repair.kind !== 'release_claim') return null;
    const { tenantId, key } = finding.repair.claim;
    const claim = identities.get(identityKey(batch.account, tenantId, key))?.claim;
    return claim ? new Date(claim.createdAt.getTime() + this.options.idempotencyWindowMs).toISOString() : null;
  }

  private draft(
    batch: PlannedBatch,
    identities: ReadonlyMap<string, IdentityFacts>,
    finding: Step,
    number: number,
    refs: EvidenceRefs,
    versions: Versions,
  ): PlanStep {
    const entry = (object: EvidenceEntry['object'], id: string, version: string | null | undefined) => {
      const after = this.writtenBy.get(objectKey(object, id));
      return after !== undefined ? { after_step: after } : { version: version ?? null };
    };
    const evidence: EvidenceEntry[] = [
      ...refs.claims.map((c) => {
        const id = claimObjectId(c.tenantId, c.key);
        return {
          object: 'claim' as const,
          id: `${c.tenantId}/${c.key}`,
          tenant_id: c.tenantId,
          key: c.key,
          ...entry('claim', id, versions.claim.get(id)),
        };
      }),
      ...refs.payments.map((id) => ({
        object: 'payment' as const,
        id,
        ...entry('payment', id, versions.payment.get(id)),
      })),
      ...refs.charges.map((c) => ({
        object: 'charge' as const,
        id: c.id,
        account: c.account,
        ...entry('charge', c.id, chargeVersion(c)),
      })),
      ...refs.intents.map((id) => ({
        object: 'refund_intent' as const,
        id,
        ...entry('refund_intent', id, versions.intent.get(id)),
      })),
      ...refs.refundRows.map((id) => ({
        object: 'payment_refund' as const,
        id,
        ...entry('payment_refund', id, versions.refundRow.get(id)),
      })),
      ...refs.refunds.map((r) => ({
        object: 'refund' as const,
        id: r.id,
        account: batch.account,
        ...entry('refund', r.id, refundVersion(r)),
      })),
    ];
    const outcome = batch.repairs.get(finding);
    const releaseBy = this.releaseBy(finding, batch, identities);
    return {
      step: number,
      batch: this.batches,
      batch_name: batch.name,
      account: batch.account,
      category: finding.category,
      subject: finding.subject,
      kind: finding.repair.kind,
      action: outcome?.action ?? (movesMoney(finding.repair) ? 'refund_duplicates' : finding.repair.kind),
      moves_money: movesMoney(finding.repair),
      ...(finding.repair.kind === 'refund_duplicates' ? { refunds: plannedRefunds(finding.repair) } : {}),
      ...(releaseBy ? { release_by: releaseBy } : {}),
      evidence,
      finding: findingToJson(finding),
    };
  }
}

interface Versions {
  claim: Map<string, string | null>;
  payment: Map<string, string | null>;
  intent: Map<string, string | null>;
  refundRow: Map<string, string | null>;
}

/** The refunds of a duplicate: every extra but the kept charge, for what is left of it, with its key. */
export function plannedRefunds(repair: Extract<RepairPlan, { kind: 'refund_duplicates' }>): PlannedRefund[] {
  return repair.refund
    .filter((c) => c.id !== repair.keep.id && c.amount - c.amountRefunded > 0)
    .map((c) => ({
      charge_id: c.id,
      kept_charge_id: repair.keep.id,
      amount: c.amount - c.amountRefunded,
      currency: c.currency,
      idempotency_key: refundIdempotencyKey(c.id),
    }));
}
