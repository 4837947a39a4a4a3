import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.js';
import type { NormalizedCharge } from './provider.js';
import { judgeBatch, type RunContext } from './batch.js';
import type { Category } from './categories.js';
import { coversWindow, readCoverage } from './coverage.js';
import { loadSliceFacts } from './facts-sql.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
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
    c.reference ?? '',
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
                 || '|' || coalesce(tenant_id, '') || '|' || coalesce(idempotency_key, '') || '|' || coalesce(reference, '')), 1, 15))::bit(60)::bigint)::text AS hash
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
  /** Hours compared with the mirror: those some run has judged (coverage.ts). */
  hours: number;
  differing: number;
  /** Hours of the range no run has judged yet (before the first run's lookback): left for a backfill. */
  not_swept_hours: number;
  /** Charges re-listed in the differing hours and judged again. */
  charges: number;
  /** What judging them again found and repaired (non-zero categories; also in the run's totals). */
  found: Partial<Record<Category, number>>;
  repaired: Partial<Record<Category, number>>;
}

/**
 * Re-lists `window`, compares hour by hour with the mirror, judges again the hours that
 * differ. Only hours earlier runs judged: an hour before the first run's lookback has
 * nothing in the mirror to compare with (its charges wait for a backfill), and this run's
 * own window was listed moments ago.
 */
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
  const hourOf = (hour: number): TimeWindow => ({
    from: new Date(hour * 1000),
    to: new Date(Math.min((hour + HOUR_S) * 1000, aligned.to.getTime())),
  });
  const all: number[] = [];
  for (let h = from; h * 1000 < aligned.to.getTime(); h += HOUR_S) all.push(h);
  // What earlier runs judged: this run's own window was listed moments ago.
  const coverage = await ctx.inTransaction((client) => readCoverage(client, ctx.run.account, aligned, ctx.run.id));
  const swept = all.filter((h) => coversWindow(coverage, hourOf(h)));
  const result: DeepReadResult = {
    from: aligned.from.toISOString(),
    to: aligned.to.toISOString(),
    hours: swept.length,
    differing: 0,
    not_swept_hours: all.length - swept.length,
    charges: 0,
    found: {},
    repaired: {},
  };
  if (swept.length === 0) {
    ctx.log.info({ label, from: result.from, to: result.to }, 'deep re-read: no hour of its range was swept yet');
    return result;
  }
  // Listed from the first swept hour: the hours before it are not compared.
  const listed = { from: new Date((swept[0] as number) * 1000), to: aligned.to };
  const stripe = new Map<number, HourDigest>();
  for await (const page of deps.listCharges(ctx.run.account, listed, options.signal)) {
    for (const c of page.charges) foldCharge(stripe, c);
  }
  const mirror = await ctx.inTransaction((client) => mirrorDigests(client, ctx.run.account, listed));
  const sweptSet = new Set(swept);
  const differing = differingHours(stripe, mirror).filter((h) => sweptSet.has(h));
  result.differing = differing.length;
  const step = stepCounter(ctx.report);
  ctx.log.info(
    { label, from: result.from, to: result.to, differing: differing.length, not_swept_hours: result.not_swept_hours },
    'deep re-read compared with the mirror',
  );
  for (const [n, hour] of differing.entries()) {
    options.signal?.throwIfAborted();
    const slice = hourOf(hour);
    const fetchedAt = deps.clock();
    const charges: NormalizedCharge[] = [];
    const unreadable = [];
    for await (const page of deps.listCharges(ctx.run.account, slice, options.signal)) {
      charges.push(...page.charges);
      // Those without an id were counted when their window was swept; a finding names the others.
      unreadable.push(...page.malformed.filter((m) => m.id !== null));
    }
    result.charges += charges.length;
    await judgeBatch(deps, options, ctx, {
      name: `${label}:${n}`,
      charges,
      fetchedAt,
      unreadable,
      load: (client) => loadSliceFacts(client, ctx.run.account, slice, slice, options),
      // Judged again, not new: matched charges were counted when their window was swept.
      countsMatched: () => false,
      // Nothing to move: a deferred key here is judged by the next deep read or event.
      checkpoint: async () => undefined,
    });
  }
  Object.assign(result, step());
  return result;
}

/** Counts a step adds to the run's report: call it at the step's start, call what it returns at the end. */
export function stepCounter(report: SweepReport): () => {
  found: Partial<Record<Category, number>>;
  repaired: Partial<Record<Category, number>>;
} {
  const found = { ...report.findings };
  const repaired = { ...report.repaired };
  const since = (before: Record<Category, number>, now: Record<Category, number>) =>
    Object.fromEntries(
      (Object.keys(now) as Category[]).flatMap((c) => (now[c] > before[c] ? [[c, now[c] - before[c]]] : [])),
    ) as Partial<Record<Category, number>>;
  return () => ({ found: since(found, report.findings), repaired: since(repaired, report.repaired) });
}
