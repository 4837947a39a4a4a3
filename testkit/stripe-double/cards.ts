/**
 * Stripe's test payment methods and what confirming with them does
 * (https://docs.stripe.com/testing). Any other `pm_card_…` succeeds like a Visa.
 */
export type CardOutcome =
  | { kind: 'succeeds' }
  | { kind: 'declined'; code: string; declineCode: string; message: string }
  | { kind: 'requires_action' };

const DECLINED = 'Your card was declined.';

const OUTCOMES: Record<string, CardOutcome> = {
  pm_card_chargeDeclined: {
    kind: 'declined',
    code: 'card_declined',
    declineCode: 'generic_decline',
    message: DECLINED,
  },
  pm_card_chargeDeclinedInsufficientFunds: {
    kind: 'declined',
    code: 'card_declined',
    declineCode: 'insufficient_funds',
    message: 'Your card has insufficient funds.',
  },
  pm_card_chargeDeclinedLostCard: {
    kind: 'declined',
    code: 'card_declined',
    declineCode: 'lost_card',
    message: DECLINED,
  },
  pm_card_chargeDeclinedStolenCard: {
    kind: 'declined',
    code: 'card_declined',
    declineCode: 'stolen_card',
    message: DECLINED,
  },
  pm_card_chargeDeclinedFraudulent: {
    kind: 'declined',
    code: 'card_declined',
    declineCode: 'fraudulent',
    message: DECLINED,
  },
  pm_card_chargeDeclinedExpiredCard: {
    kind: 'declined',
    code: 'expired_card',
    declineCode: 'expired_card',
    message: 'Your card has expired.',
  },
  pm_card_chargeDeclinedIncorrectCvc: {
    kind: 'declined',
    code: 'incorrect_cvc',
    declineCode: 'incorrect_cvc',
    message: "Your card's security code is incorrect.",
  },
  pm_card_chargeDeclinedProcessingError: {
    kind: 'declined',
    code: 'processing_error',
    declineCode: 'processing_error',
    message: 'An error occurred while processing your card. Try again in a little bit.',
  },
  pm_card_authenticationRequired: { kind: 'requires_action' },
  pm_card_threeDSecure2Required: { kind: 'requires_action' },
};

/** The outcome of confirming with `paymentMethod`, or undefined when Stripe would not know it. */
export function cardOutcome(paymentMethod: string): CardOutcome | undefined {
  const known = OUTCOMES[paymentMethod];
  if (known) return known;
  return paymentMethod.startsWith('pm_card_') ? { kind: 'succeeds' } : undefined;
}
