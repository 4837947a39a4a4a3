import type { ChargeRecord, ChargeStatus } from './charge-store.js';
import type { EventRecord } from './event-store.js';
import { seededRandom } from './random.js';
import type { DoubleState } from './state.js';

export interface SeedOptions {
  /** Inclusive; a Date or unix seconds. */
  from: Date | number;
  /** Exclusive; a Date or unix seconds. `to = from + 1` puts every charge in one second (a burst). */
  to: Date | number;
  /** A fixed amount, or `[min, max]` drawn uniformly. Default 500..50,000. */
  amount?: number | readonly [number, number];
  currency?: string;
  status?: ChargeStatus;
  /** Shared by every seeded charge (one object, so a million charges do not hold a million copies). */
  metadata?: Readonly<Record<string, string>>;
  /**
   * Per-charge metadata instead (undefined: the shared `metadata`), e.g. a benchmark
   * attributing each charge to a claim. Told each charge's id, `created`, amount and
   * index (0 = the oldest of this batch); called newest first.
   */
  metadataOf?: (charge: SeededCharge) => Readonly<Record<string, string>> | undefined;
  /**
   * Charges as big as real ones (about 2 KB of JSON each: billing and card details,
   * receipt URL, refunds list, a customer and a description), for benchmarks that must
   * move and decode what Stripe sends. Off by default: the small shape tests read.
   */
  realistic?: boolean;
  seed?: number;
  /**
   * Also store each charge's creation event (`charge.succeeded`, …), dated at its
   * `created`. Off by default: a million charges then cost a million small records
   * less, and a benchmark of the charge listing does not pay for events it never reads.
   */
  events?: boolean;
}

export interface SeededCharge {
  /** 0 = the oldest charge of this batch. */
  index: number;
  id: string;
  created: number;
  amount: number;
}

export interface SeedResult {
  count: number;
  account: string | null;
  /** Unix seconds, `[from, to)`. */
  from: number;
  to: number;
}

let batchNumber = 0;

/**
 * Bulk seeding for benchmarks: a million charges in about a second. `created` values
 * are drawn into a typed array and sorted numerically; ids are a fixed-width counter
 * handed out oldest first, so the batch is already in list order (created desc, id
 * desc) and joins the store with one linear merge.
 */
export function seedCharges(state: DoubleState, account: string | null, n: number, options: SeedOptions): SeedResult {
  const from = seconds(options.from);
  const to = seconds(options.to);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`cannot seed ${n} charges`);
  if (to <= from) throw new RangeError('seed window is empty: `to` must be after `from`');
  const random = seededRandom(options.seed ?? 7);
  const span = to - from;
  const created = new Float64Array(n);
  for (let i = 0; i < n; i += 1) created[i] = from + Math.floor(random() * span);
  created.sort();

  const [minAmount, maxAmount] =
    typeof options.amount === 'number' ? [options.amount, options.amount] : (options.amount ?? [500, 50_000]);
  const currency = (options.currency ?? 'usd').toLowerCase();
  const status = options.status ?? 'succeeded';
  const captured = status === 'succeeded';
  const metadata = Object.freeze({ ...(options.metadata ?? {}) });
  // Distinct from the 24-character random ids, and unique across seeding calls.
  const prefix = `ch_S${(batchNumber++).toString(36).padStart(4, '0')}`;

  const records = new Array<ChargeRecord>(n);
  for (let i = 0; i < n; i += 1) {
    // i-th newest charge: created[n-1-i]; the counter grows towards the newest, so ids descend in list order.
    const amount = minAmount + Math.floor(random() * (maxAmount - minAmount + 1));
    const index = n - 1 - i;
    const id = `${prefix}${index.toString(36).padStart(8, '0')}`;
    const at = created[index] as number;
    const own = options.metadataOf?.({ index, id, created: at, amount });
    records[i] = {
      id,
      account,
      created: at,
      amount,
      amountCaptured: captured ? amount : 0,
      amountRefunded: 0,
      currency,
      status,
      captured,
      disputed: false,
      paymentIntent: null,
      paymentMethod: 'pm_card_visa',
      customer: options.realistic ? `cus_S${(index % 50_000).toString(36).padStart(6, '0')}` : null,
      description: options.realistic ? `Order ${index.toString(36).toUpperCase()} (${amount} ${currency})` : null,
      metadata: own ? Object.freeze({ ...own }) : metadata,
      failureCode: status === 'failed' ? 'card_declined' : null,
      failureMessage: status === 'failed' ? 'Your card was declined.' : null,
      declineCode: status === 'failed' ? 'generic_decline' : null,
      ...(options.realistic ? { realistic: true } : {}),
    };
  }
  state.charges.insertSorted(account, records);
  state.accounts.touch(account, state.clock.nowSeconds());
  if (options.events) {
    const request = { id: null, idempotency_key: null };
    const type = `charge.${status}`;
    const events = new Array<EventRecord>(n);
    // Oldest first, as the store keeps them; ids from a counter like the charges' own.
    for (let i = 0; i < n; i += 1) {
      const record = records[n - 1 - i] as ChargeRecord;
      events[i] = {
        id: `evt_S${prefix.slice(4)}${i.toString(36).padStart(8, '0')}`,
        account,
        type,
        created: record.created,
        visibleAtMs: record.created * 1000 + state.eventLagMs,
        seq: 0,
        // The charge as created (a later refund must not rewrite its creation event), without a copy each.
        snapshot: { seededCharge: record, metadata: record.metadata },
        request,
      };
    }
    state.events.addMany(account, events);
  }
  return { count: n, account, from, to };
}

function seconds(instant: Date | number): number {
  // Rounded up like the lister: a charge at second s lies in [from, to) exactly when from <= s < to.
  return Math.ceil(instant instanceof Date ? instant.getTime() / 1000 : instant);
}
