import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.js';
import type { NormalizedCharge } from './provider.js';
import { judgeBatch, type RunContext } from './batch.js';
import { loadSliceFacts } from './facts-sql.js';
import type { SweepDeps, SweepOptions } from './types.js';
import type { TimeWindow } from './window.js';

/**
 * The second line of defence behind events: re-list a range of charges from Stripe,
 * fold each hour into a digest (count, amounts, and an order-free hash of every field
 * the sweep judges), compare with the same digest of the mirror, and judge again only
 * the hours that differ. Nothing is held per charge but the digests (one per hour), so
 * it is cheap in memory and in the database when nothing changed; it costs one
 * listing of the range against Stripe's rate budget.
 */

const HOUR_S = 3600;

export interface HourDigest {
  count: number;
  amount: bigint;
  refunded: bigint;
  /** XOR of the first 60 bits of md5(fields) of every charge: order-free, changes when any field does. */
  hash: bigint;
}

/** What the hash covers; the mirror's digest (SQL below) builds the very same string. */
export function chargeFingerprint(c: NormalizedCharge): string {
  return [
    c.id,
    c.amount,
    c.amountRefunded,
    c.currency,
    c.status,
    c.disputed ? 1 : 0,
    c.captured ? 1 : 0,
    c.tenantId ?? '',
    c.idempotencyKey ?? '',
  ].join('|');
}

export function foldCharge(digests: Map<number, HourDigest>, c: NormalizedCharge): void {
  const hour = Math.floor(c.created / HOUR_S) * HOUR_S;
  const d = digests.get(hour) ?? { count: 0, amount: 0n, refunded: 0n, hash: 0n };
  d.count += 1;
  d.amount += BigInt(c.amount);
  d.refunded += BigInt(c.amountRefunded);
  d.hash ^= BigInt(`0x${createHash('md5').update(chargeFingerprint(c)).digest('hex').slice(0, 15)}`);
  digests.set(hour, d);
}

const MIRROR_DIGESTS = `
SELECT extract(epoch FROM date_trunc('hour', created AT TIME ZONE 'UTC'))::bigint AS hour,
       count(*)::int AS count, sum(amount)::text AS amount, sum(amount_refunded)::text AS refunded,
       bit_xor(('x' || substr(md5(charge_id || '|' || amount || '|' || amount_refunded || '|' || trim(currency) || '|' || status
                 || '|' || (CASE WHEN disputed THEN 1 ELSE 0 END) || '|' || (CASE WHEN captured THEN 1 ELSE 0 END)
                 || '|' || coalesce(tenant_id, '') || '|' || coalesce(idempotency_key, '')), 1, 15))::bit(60)::bigint)::text AS hash
  FROM stripe_charges WHERE account = $1 AND created >= $2 AND created < $3
 GROUP BY 1`;

export async function mirrorDigests(
  db: Queryable,
  account: string,
  window: TimeWindow,
): Promise<Map<number, HourDigest>> {
  const { rows } = await db.query<{ hour: number; count: number; amount: string; refunded: string; hash: string }>(
    MIRROR_DIGESTS,
    [account, window.from, window.to],
  );
  return new Map(
    rows.map((r) => [
      Number(r.hour),
      { count: r.count, amount: BigInt(r.amount), refunded: BigInt(r.refunded), hash: BigInt(r.hash) },
    ]),
  );
}

/** Hours (unix seconds) where Stripe and the mirror disagree, either way. */
export function differingHours(stripe: Map<number, HourDigest>, mirror: Map<number, HourDigest>): number[] {
  const hours = new Set([...stripe.keys(), ...mirror.keys()]);
  const same = (a?: HourDigest, b?: HourDigest) =>
    a !== undefined &&
    b !== undefined &&
    a.count === b.count &&
    a.amount === b.amount &&
    a.refunded === b.refunded &&
    a.hash === b.hash;
  return [...hours].filter((h) => !same(stripe.get(h), mirror.get(h))).sort((a, b) => a - b);
}

export interface DeepReadResult {
  from: string;
  to: string;
  hours: number;
  differing: number;
}

/** Re-lists `window`, compares hour by hour with the mirror, judges again the hours that differ. */
export async function deepRead(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  window: TimeWindow,
  label: string,
): Promise<DeepReadResult> {
  // Whole hours from the start; the end is the caller's (settled) bound, read the same way on both sides.
  const from = Math.floor(window.from.getTime() / 1000 / HOUR_S) * HOUR_S;
  const aligned = { from: new Date(from * 1000), to: window.to };
  const stripe = new Map<number, HourDigest>();
  for await (const page of deps.listCharges(ctx.run.account, aligned, options.signal)) {
    for (const c of page.charges) foldCharge(stripe, c);
  }
  const mirror = await ctx.inTransaction((client) => mirrorDigests(client, ctx.run.account, aligned));
  const differing = differingHours(stripe, mirror);
  ctx.log.info(
    { label, from: aligned.from.toISOString(), to: aligned.to.toISOString(), differing: differing.length },
    'deep re-read compared with the mirror',
  );
  for (const [n, hour] of differing.entries()) {
    options.signal?.throwIfAborted();
    const slice = { from: new Date(hour * 1000), to: new Date(Math.min((hour + HOUR_S) * 1000, aligned.to.getTime())) };
    const fetchedAt = deps.clock();
    const charges: NormalizedCharge[] = [];
    const unreadable = [];
    for await (const page of deps.listCharges(ctx.run.account, slice, options.signal)) {
      charges.push(...page.charges);
      // Those without an id were counted when their window was swept; a finding names the others.
      unreadable.push(...page.malformed.filter((m) => m.id !== null));
    }
    await judgeBatch(deps, options, ctx, {
      name: `${label}:${n}`,
      charges,
      fetchedAt,
      unreadable,
      load: (client) => loadSliceFacts(client, ctx.run.account, slice, slice, options.storedAnswer),
      // Judged again, not new: matched charges were counted when their window was swept.
      countsMatched: () => false,
      // Nothing to move: a deferred key here is judged by the next deep read or event.
      checkpoint: async () => undefined,
    });
  }
  return {
    from: aligned.from.toISOString(),
    to: aligned.to.toISOString(),
    hours: Math.max(0, Math.round((aligned.to.getTime() - aligned.from.getTime()) / 3_600_000)),
    differing: differing.length,
  };
}
