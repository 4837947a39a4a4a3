import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { configDefaults, type ReviewSettings } from '../../src/config.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import type { Pool } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { createReviewServer, reviewAuth, type ReviewAuth } from '../../src/serve/index.js';
import type { NormalizedCharge, ProviderEvidence } from '../../src/sweep/provider.js';
import { sweep, sweepOptions } from '../../src/sweep/sweep.js';
import { charge, memorySweepDeps, seedClaim, seedEffect, seedPaid } from './scenario.js';

/**
 * The review page in tests: a scenario of findings made by a real sweep, the page built
 * as `sweeper serve` builds it, and a client for Fastify's `inject` that keeps cookies
 * and reads the CSRF token from the forms, as a browser would.
 */

/** Markup in a charge's metadata: the page must show it as text. */
export const HOSTILE = {
  tenant: '<img src=x onerror=alert(1)>',
  key: '<script>alert(1)</script>',
} as const;

export const TOKEN = 'a-review-token-long-enough-0123';

const HOUR = 3_600_000;
const secs = (d: Date) => Math.floor(d.getTime() / 1000);

export interface ReviewScenario {
  /** The open findings' ids by category, oldest first. */
  open: Record<string, number[]>;
}

/**
 * Findings of several kinds, made by a backfill over the last three days at `now`: two
 * duplicate_effect (one order paid twice, twice), an amount_mismatch, a stale_claim
 * older than 24 h, unattributed charges without metadata (10, 50 and 120 USD), one
 * whose metadata holds markup (HOSTILE), and a claim_without_effect the sweep repaired.
 */
export async function seedReviewScenario(pool: Pool, now: Date): Promise<ReviewScenario> {
  const ago = (ms: number) => new Date(now.getTime() - ms);
  await ensureDayPartitions(pool, {
    from: utcDay(ago(4 * 24 * HOUR)),
    to: utcDay(new Date(now.getTime() + 24 * HOUR)),
  });
  const stripe: NormalizedCharge[] = [];
  const paid = (id: string, key: string, at: Date, over: Partial<NormalizedCharge> = {}) =>
    seedPaid(pool, stripe, { id, tenantId: 'shop', key, at, over });
  await paid('ch_order1_a', 'attempt-1a', ago(30 * HOUR), { reference: 'order-1', paymentIntent: 'pi_order1_a' });
  await paid('ch_order1_b', 'attempt-1b', ago(29 * HOUR), { reference: 'order-1', paymentIntent: 'pi_order1_b' });
  await paid('ch_order2_a', 'attempt-2a', ago(20 * HOUR), { reference: 'order-2', amount: 4200 });
  await paid('ch_order2_b', 'attempt-2b', ago(19 * HOUR), { reference: 'order-2', amount: 4200 });
  // The payment row says 20.00, Stripe charged 25.00.
  stripe.push(
    charge({ id: 'ch_mismatch', created: secs(ago(10 * HOUR)), tenantId: 'shop', idempotencyKey: 'mm', amount: 2500 }),
  );
  await seedClaim(pool, {
    tenantId: 'shop',
    key: 'mm',
    status: 'completed',
    createdAt: ago(10 * HOUR),
    responseCharge: 'ch_mismatch',
    amount: 2000,
  });
  await seedEffect(pool, {
    chargeId: 'ch_mismatch',
    tenantId: 'shop',
    key: 'mm',
    amount: 2000,
    createdAt: ago(10 * HOUR),
  });
  await seedClaim(pool, { tenantId: 'shop', key: 'stuck', status: 'in_flight', createdAt: ago(40 * HOUR) });
  // A worker died after Stripe charged: the sweep repairs it (an automatic audit row).
  await seedClaim(pool, { tenantId: 'shop', key: 'crashed', status: 'in_flight', createdAt: ago(6 * HOUR) });
  stripe.push(charge({ id: 'ch_crashed', created: secs(ago(6 * HOUR)), tenantId: 'shop', idempotencyKey: 'crashed' }));
  for (const [i, amount] of [1000, 5000, 12000].entries())
    stripe.push(charge({ id: `ch_nometa_${i + 1}`, created: secs(ago((8 - i) * HOUR)), amount }));
  stripe.push(
    charge({
      id: 'ch_hostile',
      created: secs(ago(5 * HOUR)),
      tenantId: HOSTILE.tenant,
      idempotencyKey: HOSTILE.key,
      amount: 666,
    }),
  );
  await sweep(
    memorySweepDeps(pool, () => stripe, now),
    sweepOptions({ mode: 'backfill', accounts: ['platform'], window: { from: ago(3 * 24 * HOUR), to: ago(HOUR) } }),
  );
  const { rows } = await pool.query<{ id: string; category: string }>(
    `SELECT id, category FROM recon_findings WHERE state = 'open' ORDER BY id`,
  );
  const open: Record<string, number[]> = {};
  for (const r of rows) (open[r.category] ??= []).push(Number(r.id));
  return { open };
}

export function reviewSettings(over: Partial<ReviewSettings> = {}): ReviewSettings {
  return { token: TOKEN, trustedHeader: null, trustedProxies: [], resolvers: ['alice'], actor: null, ...over };
}

/** The review page as `sweeper serve` builds it, on `pool`, at a fixed clock. */
export async function reviewApp(
  pool: Pool,
  now: Date,
  settings: ReviewSettings = reviewSettings(),
  options: { insecureLocal?: boolean; host?: string; evidence?: ProviderEvidence | null } = {},
): Promise<{ app: FastifyInstance; auth: ReviewAuth }> {
  const auth = reviewAuth(settings, {
    insecureLocal: options.insecureLocal ?? false,
    host: options.host ?? '127.0.0.1',
    osUser: 'tester',
  });
  const config = configDefaults();
  const app = await createReviewServer(
    { pool, config, settings, clock: () => now, logger: silentLogger(), evidence: options.evidence ?? null },
    auth,
  );
  return { app, auth };
}

/** The CSRF token of the first form of a page. */
export function csrfOf(html: string): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error(`no CSRF token in the page:\n${html.slice(0, 500)}`);
  return token;
}

/** A visitor of the page through `inject`: cookies kept between requests, as a browser keeps them. */
export class Visitor {
  readonly cookies = new Map<string, string>();

  constructor(
    private readonly app: FastifyInstance,
    private readonly base: { remoteAddress?: string; headers?: Record<string, string> } = {},
  ) {}

  private remember(response: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of response.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === '' || c.maxAge === 0) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return response;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { ...this.base.headers, ...(cookie ? { cookie } : {}), ...extra };
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return this.remember(
      await this.app.inject({
        method: 'GET',
        url,
        headers: this.headers(headers),
        remoteAddress: this.base.remoteAddress,
      }),
    );
  }

  /** A form post; `fields` values may repeat (`id` of the bulk form) as arrays. */
  async post(
    url: string,
    fields: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    return this.remember(
      await this.app.inject({
        method: 'POST',
        url,
        payload: body.toString(),
        headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...headers }),
        remoteAddress: this.base.remoteAddress,
      }),
    );
  }

  /** GETs `page` and posts its form's CSRF token with `fields` to `url`. */
  async submit(page: string, url: string, fields: Record<string, string | string[]>): Promise<LightMyRequestResponse> {
    const form = await this.get(page);
    return this.post(url, { _csrf: csrfOf(form.body), ...fields });
  }

  async signIn(name: string, token = TOKEN): Promise<LightMyRequestResponse> {
    return this.submit('/signin', '/signin', { token, name, next: '/' });
  }
}
