import { claimKey, claimSubject } from '../../domain/identity.js';
import { finding } from './build.js';
import type { ClaimVersion, Finding } from './types.js';

/**
 * Refunds the application makes (docs/judgement.md "Refunds the application makes"): each
 * Stripe refund judged against its local row (payment_refunds) and the refund claim its
 * metadata names, and each local row against Stripe. Pure: the facts are read and the
 * repairs made elsewhere (refund-facts.ts, refund-repairs.ts).
 */

export type RefundStatus = 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled';

/** A refund as Stripe holds it (listed or read by id). */
export interface StripeRefundFact {
  id: string;
  chargeId: string;
  created: Date;
  amount: number;
  currency: string;
  status: RefundStatus;
  failureReason: string | null;
  tenantId: string | null;
  key: string | null;
}

/** A local refund row (payment_refunds), as any writer left it. */
export interface RefundRowFact {
  refundId: string;
  chargeId: string;
  tenantId: string | null;
  key: string | null;
  amount: number;
  currency: string;
  status: RefundStatus;
  createdAt: Date;
}

/** A refund claim: `operation = 'refund'`, or a stored answer in Stripe's Refund shape. */
export interface RefundClaimFact {
  tenantId: string;
  key: string;
  attempt: number;
  status: 'in_flight' | 'completed' | 'released';
  lockedUntil: Date | null;
  createdAt: Date;
  /** The refund its stored answer names (a Refund object's `id`); null without one. */
  answerRefundId: string | null;
  /** The stored answer's meaning: a refusal (`declined`, `rejected`) is not a refund made. */
  responseOutcome: string | null;
}

export interface RefundFacts {
  /** Stripe's refunds being judged: listed in the step's window, or read by id. */
  refunds: StripeRefundFact[];
  /** Refund ids Stripe was asked for by id and does not have on this account. */
  missing: ReadonlySet<string>;
  /** Stripe refunds beyond the window: not judged here, but a claim they name made its refund. */
  later: StripeRefundFact[];
  rows: RefundRowFact[];
  claims: RefundClaimFact[];
}

export interface RefundJudgeContext {
  now: Date;
  /** A claim older than this is never released: Stripe has forgotten its key (a retry could refund again). */
  providerIdempotencyWindowMs: number;
}

export interface RefundJudgement {
  findings: Finding[];
  /** Refunds whose row and claim agree with Stripe. */
  matched: string[];
  /** Every subject looked at (refund ids, claim subjects): their open findings not raised again have healed. */
  judgedSubjects: string[];
}

const FAILED: ReadonlySet<RefundStatus> = new Set(['failed', 'canceled']);
const REFUSED: ReadonlySet<string> = new Set(['declined', 'rejected']);

export function judgeRefunds(facts: RefundFacts, ctx: RefundJudgeContext): RefundJudgement {
  const out: RefundJudgement = { findings: [], matched: [], judgedSubjects: [] };
  const rows = new Map(facts.rows.map((r) => [r.refundId, r]));
  const claimOf = claimFinder(facts.claims);
  const seen = new Set<string>();
  for (const refund of [...facts.refunds].sort(byCreatedThenId)) {
    if (seen.has(refund.id)) continue;
    seen.add(refund.id);
    const row = rows.get(refund.id);
    const claim = claimOf(refund);
    // A live writer holds the claim: it records its own refund; judged by a later run.
    if (!row && claim && isLive(claim, ctx.now)) continue;
    out.judgedSubjects.push(refund.id);
    if (row) judgeRecorded(out, refund, row);
    else judgeUnrecorded(out, refund, claim);
  }
  for (const row of facts.rows) {
    if (seen.has(row.refundId) || !facts.missing.has(row.refundId)) continue;
    out.judgedSubjects.push(row.refundId);
    out.findings.push(refundFinding('refund_effect_without_refund', row.refundId, row, { row: rowSummary(row) }));
  }
  judgeClaims(out, facts, ctx);
  return out;
}

/** A refund the application recorded: the row must agree with Stripe on money and state. */
function judgeRecorded(out: RefundJudgement, refund: StripeRefundFact, row: RefundRowFact): void {
  const details = { refund: refundSummary(refund), row: rowSummary(row) };
  if (row.amount !== refund.amount || row.currency !== refund.currency) {
    out.findings.push({
      ...refundFinding('amount_mismatch', refund.id, refund, details),
      reason: `the refund row records ${row.amount} ${row.currency}; Stripe refunded ${refund.amount} ${refund.currency}`,
    });
    return;
  }
  if (row.status === refund.status) {
    out.matched.push(refund.id);
    return;
  }
  // The row takes Stripe's state either way; a refund that failed or was canceled after the
  // application recorded it stays open: the customer was told of money that did not move.
  const failedLate = FAILED.has(refund.status) && !FAILED.has(row.status);
  out.findings.push({
    ...refundFinding('refund_status_drift', refund.id, refund, details),
    repair: { kind: 'update_refund', refundId: refund.id, from: row.status, to: refund.status },
    ...(failedLate
      ? {
          keepOpen: true,
          reason: `the refund ${refund.status} at Stripe after it was recorded ${row.status}${refund.failureReason ? ` (${refund.failureReason})` : ''}: the customer was not refunded`,
        }
      : {}),
  });
}

/** A refund at Stripe without a local row: recorded when it names a refund claim here. */
function judgeUnrecorded(out: RefundJudgement, refund: StripeRefundFact, claim: RefundClaimFact | undefined): void {
  // A refund naming no refund claim here (made in the dashboard, or by other code) is
  // left to the payouts: its balance transaction has no local row there.
  if (!claim) return;
  const details = { refund: refundSummary(refund), claim: claimSummary(claim) };
  const about = { chargeId: refund.chargeId, tenantId: claim.tenantId, key: claim.key };
  const base = refundFinding('refund_without_effect', refund.id, about, details);
  if (claim.status === 'completed' && claim.responseOutcome !== null && REFUSED.has(claim.responseOutcome)) {
    out.findings.push({
      ...base,
      reason: `the claim stores a refusal (${claim.responseOutcome}), yet Stripe made this refund: a person decides which holds`,
    });
    return;
  }
  if (claim.answerRefundId !== null && claim.answerRefundId !== refund.id) {
    out.findings.push({
      ...base,
      reason: `the claim's stored answer names another refund (${claim.answerRefundId}): a person decides which one the claim stands for`,
    });
    return;
  }
  const keepAnswer = claim.status === 'completed' && claim.answerRefundId === refund.id;
  out.findings.push({
    ...base,
    repair: { kind: 'record_refund', refund, claim: keepAnswer ? null : versionOf(claim) },
  });
}

/**
 * Refund claims with no refund at Stripe: an attempt that died before Stripe saw it is
 * released while Stripe still remembers its key (the retry sends the same one); a stored
 * refund that Stripe does not have is a lost effect.
 */
function judgeClaims(out: RefundJudgement, facts: RefundFacts, ctx: RefundJudgeContext): void {
  const named = new Set(
    [...facts.refunds, ...facts.later].flatMap((r) => (r.tenantId && r.key ? [claimKey(r.tenantId, r.key)] : [])),
  );
  const recorded = new Set(facts.rows.flatMap((r) => (r.tenantId && r.key ? [claimKey(r.tenantId, r.key)] : [])));
  const stripeIds = new Set([...facts.refunds, ...facts.later].map((r) => r.id));
  const rowIds = new Set(facts.rows.map((r) => r.refundId));
  for (const claim of facts.claims) {
    const id = claimKey(claim.tenantId, claim.key);
    if (named.has(id) || recorded.has(id)) continue;
    if (claim.answerRefundId !== null && rowIds.has(claim.answerRefundId)) continue;
    if (claim.answerRefundId !== null && stripeIds.has(claim.answerRefundId)) continue; // judged with its refund
    if (claim.status === 'completed' && claim.answerRefundId !== null) {
      if (!facts.missing.has(claim.answerRefundId)) continue; // not asked yet: judged once Stripe answered
      out.judgedSubjects.push(claimSubject(claim.tenantId, claim.key));
      out.findings.push(lostRefund(claim));
      continue;
    }
    if (claim.status !== 'in_flight' || isLive(claim, ctx.now)) continue;
    out.judgedSubjects.push(claimSubject(claim.tenantId, claim.key));
    out.findings.push(staleRefundClaim(claim, ctx));
  }
}

function lostRefund(claim: RefundClaimFact): Finding {
  return finding({
    category: 'lost_effect',
    tenantId: claim.tenantId,
    key: claim.key,
    charge: null,
    reason: `the claim stores refund ${claim.answerRefundId}, which Stripe (asked by id) does not have, and no refund row records it`,
    details: { claim: claimSummary(claim) },
    covers: {},
  });
}

function staleRefundClaim(claim: RefundClaimFact, ctx: RefundJudgeContext): Finding {
  const releasable = ctx.now.getTime() - claim.createdAt.getTime() < ctx.providerIdempotencyWindowMs;
  return finding({
    category: 'stale_claim',
    tenantId: claim.tenantId,
    key: claim.key,
    charge: null,
    repair: releasable ? { kind: 'release_claim', claim: versionOf(claim) } : null,
    ...(releasable
      ? {}
      : {
          reason:
            "refund claim is older than Stripe's 24 h idempotency window: a retry now could refund twice, so it is not released",
        }),
    details: { claim: claimSummary(claim), operation: 'refund' },
    covers: {},
  });
}

/** The refund claim a refund belongs to: the one its metadata names, else the one whose stored answer names it. */
function claimFinder(claims: readonly RefundClaimFact[]): (refund: StripeRefundFact) => RefundClaimFact | undefined {
  const byKey = new Map(claims.map((c) => [claimKey(c.tenantId, c.key), c]));
  const byAnswer = new Map(claims.flatMap((c) => (c.answerRefundId ? [[c.answerRefundId, c] as const] : [])));
  return (refund) =>
    (refund.tenantId && refund.key ? byKey.get(claimKey(refund.tenantId, refund.key)) : undefined) ??
    byAnswer.get(refund.id);
}

function isLive(claim: RefundClaimFact, now: Date): boolean {
  return claim.status === 'in_flight' && claim.lockedUntil !== null && claim.lockedUntil > now;
}

function refundFinding(
  category: Finding['category'],
  refundId: string,
  about: { chargeId: string; tenantId: string | null; key: string | null },
  details: Record<string, unknown>,
): Finding {
  return finding({
    category,
    subject: refundId,
    tenantId: about.tenantId,
    key: about.key,
    charge: null,
    chargeId: about.chargeId,
    details: { ...details, refund_id: refundId },
    covers: {},
  });
}

function versionOf(claim: RefundClaimFact): ClaimVersion {
  return { tenantId: claim.tenantId, key: claim.key, attempt: claim.attempt, status: claim.status };
}

function byCreatedThenId(a: StripeRefundFact, b: StripeRefundFact): number {
  return a.created.getTime() - b.created.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export function refundSummary(r: StripeRefundFact) {
  return {
    id: r.id,
    charge: r.chargeId,
    created: r.created.toISOString(),
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    failure_reason: r.failureReason,
  };
}

function rowSummary(r: RefundRowFact) {
  return {
    refund_id: r.refundId,
    charge_id: r.chargeId,
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    created_at: r.createdAt.toISOString(),
  };
}

function claimSummary(c: RefundClaimFact) {
  return {
    status: c.status,
    attempt: c.attempt,
    created_at: c.createdAt.toISOString(),
    locked_until: c.lockedUntil?.toISOString() ?? null,
    response_outcome: c.responseOutcome,
    answer_refund: c.answerRefundId,
  };
}
