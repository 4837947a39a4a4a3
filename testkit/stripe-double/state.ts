import { AccountStore } from './accounts.js';
import { BalanceStore } from './balance-store.js';
import { ChargeStore, type ChargeRecord, type ChargeStatus } from './charge-store.js';
import { DoubleClock } from './clock.js';
import { FxTable } from './currency.js';
import type { DisputeRecord } from './disputes.js';
import { EventStore } from './event-store.js';
import { FeeBook } from './fees.js';
import { recordRefund, settlementOf } from './ledger.js';
import { PayoutStore } from './payouts.js';
import { randomId, seededRandom } from './random.js';
import type { PaymentIntentRecord, RefundRecord } from './records.js';

/** Everything the double knows, in memory; handlers and control hooks both work on this. */
export class DoubleState {
  readonly charges: ChargeStore;
  readonly intents = new Map<string, PaymentIntentRecord>();
  readonly refunds = new Map<string, RefundRecord>();
  readonly disputes = new Map<string, DisputeRecord>();
  readonly events = new EventStore();
  /** Connected accounts and every account's money settings (the platform's too). */
  readonly accounts: AccountStore;
  /** Stored balance transactions (a charge's is derived: ledger.ts) and what paid them out. */
  readonly balance: BalanceStore;
  readonly payouts = new PayoutStore();
  readonly fees = new FeeBook();
  readonly fx = new FxTable();
  /** The status a refund made through the API starts in (`pending`: it succeeds, fails or is canceled later). */
  newRefundStatus: 'succeeded' | 'pending' = 'succeeded';
  /** How long after its `created` a new event becomes listable (Stripe's events are eventually consistent). */
  eventLagMs = 0;
  /** Charges created less than this long ago are not found by search (Stripe's search lags by up to a minute). */
  searchLagMs = 0;
  private random: () => number;
  // Events and disputes draw ids from their own sequence, so the ids of charges, intents
  // and refunds stay what they were for a given seed whether or not events are read.
  private eventRandom: () => number;

  constructor(
    readonly clock: DoubleClock,
    private readonly seed: number = 1,
  ) {
    this.charges = new ChargeStore(() => clock.nowMs());
    this.random = seededRandom(seed);
    this.eventRandom = seededRandom(seed + 0x5eed);
    // Own sequences again: accounts, payouts and balance transactions leave charge ids alone.
    this.accounts = new AccountStore(seed + 0xacc0, clock.nowSeconds());
    this.balance = new BalanceStore(seed + 0xba1);
  }

  newId(prefix: string): string {
    return randomId(prefix, this.random);
  }

  /** Ids of events (`evt`) and disputes (`dp`). */
  newEventId(prefix: string): string {
    return randomId(prefix, this.eventRandom);
  }

  chargeIn(account: string | null, id: string): ChargeRecord | undefined {
    const charge = this.charges.get(id);
    return charge && charge.account === account ? charge : undefined;
  }

  intentIn(account: string | null, id: string): PaymentIntentRecord | undefined {
    const intent = this.intents.get(id);
    return intent && intent.account === account ? intent : undefined;
  }

  /** `listedAtMs` (double clock) in the future: retrievable now, listed only from then on. */
  addCharge(
    fields: Partial<ChargeRecord> & { account: string | null; amount: number; currency: string; status: ChargeStatus },
    listedAtMs?: number,
  ): ChargeRecord {
    const succeeded = fields.status === 'succeeded';
    const captured = fields.captured ?? succeeded;
    const record: ChargeRecord = {
      id: fields.id ?? this.newId('ch'),
      account: fields.account,
      created: fields.created ?? this.clock.nowSeconds(),
      amount: fields.amount,
      amountCaptured: fields.amountCaptured ?? (captured ? fields.amount : 0),
      amountRefunded: fields.amountRefunded ?? 0,
      currency: fields.currency.toLowerCase(),
      status: fields.status,
      captured,
      disputed: fields.disputed ?? false,
      paymentIntent: fields.paymentIntent ?? null,
      paymentMethod: fields.paymentMethod ?? null,
      customer: fields.customer ?? null,
      description: fields.description ?? null,
      metadata: fields.metadata ?? {},
      failureCode: fields.failureCode ?? null,
      failureMessage: fields.failureMessage ?? null,
      declineCode: fields.declineCode ?? null,
    };
    if (fields.omitFields) record.omitFields = fields.omitFields;
    this.charges.insert(record, listedAtMs);
    this.accounts.touch(record.account, this.clock.nowSeconds());
    // A charge made one by one settles now, with today's fees and rates (seeded ones: when first needed).
    const settlementCurrency = this.accounts.settingsOf(record.account).defaultCurrency;
    if (this.fx.knows(record.currency) && this.fx.knows(settlementCurrency)) settlementOf(this, record);
    return record;
  }

  /**
   * Refunds `amount` (default: what is left) of a charge, taking it out of the balance
   * (a `refund` balance transaction); throws a plain Error on an impossible refund.
   */
  refund(
    charge: ChargeRecord,
    options: {
      amount?: number;
      reason?: string | null;
      metadata?: Record<string, string>;
      status?: 'pending' | 'succeeded';
    } = {},
  ): RefundRecord {
    const left = charge.amountCaptured - charge.amountRefunded;
    const amount = options.amount ?? left;
    if (charge.status !== 'succeeded' || !charge.captured)
      throw new Error(`charge ${charge.id} has no captured funds to refund`);
    if (left <= 0) throw new Error(`charge ${charge.id} has already been refunded`);
    if (!Number.isSafeInteger(amount) || amount < 1 || amount > left) {
      throw new Error(
        `refund amount ${amount} is not between 1 and the unrefunded amount ${left} of charge ${charge.id}`,
      );
    }
    charge.amountRefunded += amount;
    const refund: RefundRecord = {
      id: this.newId('re'),
      account: charge.account,
      created: this.clock.nowSeconds(),
      amount,
      currency: charge.currency,
      charge: charge.id,
      paymentIntent: charge.paymentIntent,
      reason: options.reason ?? null,
      metadata: options.metadata ?? {},
      status: options.status ?? 'succeeded',
      failureReason: null,
      balanceTransaction: null,
      failureBalanceTransaction: null,
    };
    this.refunds.set(refund.id, refund);
    refund.balanceTransaction = recordRefund(this, refund).id;
    return refund;
  }

  reset(): void {
    for (const id of [...this.intents.keys()]) this.intents.delete(id);
    for (const id of [...this.refunds.keys()]) this.refunds.delete(id);
    this.disputes.clear();
    this.events.clear();
    this.charges.clear();
    this.accounts.clear(this.clock.nowSeconds());
    this.balance.clear();
    this.payouts.clear();
    this.fees.reset();
    this.fx.reset();
    this.newRefundStatus = 'succeeded';
    this.eventLagMs = 0;
    this.searchLagMs = 0;
    this.random = seededRandom(this.seed);
    this.eventRandom = seededRandom(this.seed + 0x5eed);
  }
}
