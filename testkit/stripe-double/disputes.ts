/**
 * Disputes as Stripe models them: one object per dispute on a charge, opened by the
 * cardholder's bank and closed won or lost. The double only needs the lifecycle and the
 * fields a reconciler reads (`charge`, `amount`, `status`); evidence stays empty.
 */
import { DAY_SECONDS } from '../../src/time/units.js';

export type DisputeStatus =
  'warning_needs_response' | 'needs_response' | 'under_review' | 'won' | 'lost' | 'warning_closed';
export type DisputeOutcome = 'won' | 'lost';

export interface DisputeRecord {
  id: string;
  account: string | null;
  charge: string;
  paymentIntent: string | null;
  created: number;
  amount: number;
  currency: string;
  reason: string;
  status: DisputeStatus;
  metadata: Record<string, string>;
  /** Its balance transactions: the withdrawal, and the reversal when won. */
  balanceTransactions: string[];
}

export interface DisputeJson {
  id: string;
  object: 'dispute';
  amount: number;
  charge: string;
  currency: string;
  payment_intent: string | null;
  status: DisputeStatus;
  [key: string]: unknown;
}

export function isClosed(dispute: DisputeRecord): boolean {
  return dispute.status === 'won' || dispute.status === 'lost' || dispute.status === 'warning_closed';
}

/** `balanceTransactions`: the dispute's balance transactions as the API renders them (ledger). */
export function renderDispute(
  dispute: DisputeRecord,
  balanceTransactions: readonly Record<string, unknown>[] = [],
): DisputeJson {
  const closed = isClosed(dispute);
  return {
    id: dispute.id,
    object: 'dispute',
    amount: dispute.amount,
    balance_transactions: [...balanceTransactions],
    charge: dispute.charge,
    created: dispute.created,
    currency: dispute.currency,
    evidence: {},
    evidence_details: {
      due_by: closed ? null : dispute.created + 21 * DAY_SECONDS,
      has_evidence: false,
      past_due: false,
      submission_count: 0,
    },
    is_charge_refundable: false,
    livemode: false,
    metadata: { ...dispute.metadata },
    payment_intent: dispute.paymentIntent,
    reason: dispute.reason,
    status: dispute.status,
  };
}
