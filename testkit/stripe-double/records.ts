export type { ChargeRecord, ChargeStatus } from './charge-store.js';

export type PaymentIntentStatus =
  | 'requires_payment_method'
  | 'requires_confirmation'
  | 'requires_action'
  | 'requires_capture'
  | 'processing'
  | 'succeeded'
  | 'canceled';

export interface PaymentIntentRecord {
  id: string;
  account: string | null;
  created: number;
  amount: number;
  currency: string;
  status: PaymentIntentStatus;
  paymentMethod: string | null;
  customer: string | null;
  description: string | null;
  metadata: Record<string, string>;
  captureMethod: 'automatic' | 'automatic_async' | 'manual';
  automaticPaymentMethods: { enabled: boolean; allow_redirects?: string } | null;
  latestCharge: string | null;
  lastPaymentError: Record<string, unknown> | null;
  clientSecret: string;
}

export interface RefundRecord {
  id: string;
  account: string | null;
  created: number;
  amount: number;
  currency: string;
  charge: string;
  paymentIntent: string | null;
  reason: string | null;
  metadata: Record<string, string>;
  status: 'pending' | 'succeeded' | 'failed';
}
