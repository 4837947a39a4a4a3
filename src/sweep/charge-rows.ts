import { accountName } from '../domain/identity.js';
import type { ChargeFact } from './facts.js';

/** How the sweep's statements read a mirror row: its columns (alias sc) and the fact built from them. */

export const CHARGE_COLUMNS = `sc.account, sc.charge_id, sc.created, sc.amount, sc.amount_captured, sc.amount_refunded, sc.currency,
  sc.status, sc.captured, sc.refunded, sc.disputed, sc.payment_intent_id, sc.customer, sc.payment_method, sc.tenant_id,
  sc.idempotency_key, sc.reference, sc.card_fingerprint,
  (SELECT d.status FROM stripe_disputes d WHERE d.charge_id = sc.charge_id
    ORDER BY d.as_of DESC, d.stage DESC, d.event_id DESC LIMIT 1) AS dispute_status`;

type Row = Record<string, unknown>;

export const date = (v: unknown) => (v instanceof Date ? v : new Date(String(v)));
export const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : date(v));
export const numberOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
export const textOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

/** A charge row (its own columns), with `recordedIn` when its payment row is under another account. */
export function chargeFact(r: Row): ChargeFact {
  const account = String(r.account);
  const paymentAccount =
    r.p_charge_id === null || r.p_charge_id === undefined ? null : accountName(textOrNull(r.p_account_id));
  return {
    id: String(r.charge_id),
    account,
    created: date(r.created),
    amount: Number(r.amount),
    amountCaptured: Number(r.amount_captured),
    amountRefunded: Number(r.amount_refunded),
    currency: String(r.currency).trim(),
    status: r.status as ChargeFact['status'],
    captured: Boolean(r.captured),
    refunded: Boolean(r.refunded),
    disputed: Boolean(r.disputed),
    paymentIntent: textOrNull(r.payment_intent_id),
    customer: textOrNull(r.customer),
    paymentMethod: textOrNull(r.payment_method),
    tenantId: textOrNull(r.tenant_id),
    idempotencyKey: textOrNull(r.idempotency_key),
    reference: textOrNull(r.reference),
    cardFingerprint: textOrNull(r.card_fingerprint),
    disputeStatus: textOrNull(r.dispute_status),
    recordedIn: paymentAccount !== null && paymentAccount !== account ? paymentAccount : null,
  };
}
