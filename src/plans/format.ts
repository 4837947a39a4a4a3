import { createHash } from 'node:crypto';
import { ExitCode } from '../exit-codes.js';
import type { FindingCategory, RepairPlan } from '../sweep/judge/index.js';
import type { SweepReport } from '../sweep/types.js';

/**
 * A saved plan as its file and its database row hold it (docs/plans.md): every step a
 * run would take, each with the evidence it read. Pure: the digest, the canonical JSON
 * it is taken over, and the reading of a file.
 */
export const PLAN_FORMAT = 'sweeper-plan/1';

/**
 * What a piece of evidence is: a claim, a payment row, a charge at Stripe, the refund
 * outbox's row of a charge, the application's refund row (payment_refunds), a refund at Stripe.
 */
export type EvidenceObject = 'claim' | 'payment' | 'charge' | 'refund_intent' | 'payment_refund' | 'refund';

/**
 * One object a step read, and its version then: the SHA-256 of the content the sweep
 * judges (evidence.ts), or null when it did not exist (a step that inserts a row read its
 * absence). `after_step`: an earlier step of this plan writes it, so what this step read
 * is what that step leaves; it counts as unchanged when that step was applied.
 */
export interface EvidenceEntry {
  object: EvidenceObject;
  /** A claim: its tenant and key joined by `/` for people (tenant_id and key say it exactly); refunds and their rows: the refund id; the others: the charge id. */
  id: string;
  tenant_id?: string;
  key?: string;
  /** Charges: the account they are read in. */
  account?: string;
  version?: string | null;
  after_step?: number;
}

/** A refund a step makes, with the idempotency key every attempt at it sends. */
export interface PlannedRefund {
  charge_id: string;
  kept_charge_id: string;
  amount: number;
  currency: string;
  idempotency_key: string;
}

export interface PlanStep {
  /** 1, 2, …: the order steps are applied in. */
  step: number;
  /** The batch (slice, part, late-changes batch) of the run that planned it: one batch's steps are applied together. */
  batch: number;
  batch_name: string;
  account: string;
  category: FindingCategory;
  subject: string;
  kind: RepairPlan['kind'];
  /** What the dry run says the repair does (`insert_effect_and_complete_claim`, `release_claim`, `refund`…). */
  action: string;
  moves_money: boolean;
  refunds?: PlannedRefund[];
  /** A release: the instant after which a retry could charge twice (Stripe's idempotency window), so no apply releases it. */
  release_by?: string;
  evidence: EvidenceEntry[];
  /** The finding the step repairs, with its planned repair, as the judgement made it (dates as ISO 8601). */
  finding: Record<string, unknown>;
}

export interface PlanBody {
  format: typeof PLAN_FORMAT;
  id: string;
  created_at: string;
  author: string;
  mode: 'run' | 'backfill';
  accounts: string[];
  options: { refund_duplicates: boolean; allow_mass_repair: boolean };
  /** The run's report per account, as a dry run says it (`repaired`: would repair). */
  reports: SweepReport[];
  steps: PlanStep[];
}

/** The file: the plan and its digest. */
export interface PlanFile {
  digest: string;
  plan: PlanBody;
}

/**
 * JSON with every object's keys sorted and no whitespace: one text for one plan, however
 * its file was indented or its keys ordered (jsonb reorders them), so its digest is too.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value) as string | undefined;
    return text ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The digest of a plan: `sha256:` and the hex SHA-256 of its canonical JSON. */
export function planDigest(plan: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(plan))}`;
}

/** The plan file's text: indented for people; the digest does not depend on the layout. */
export function planFileText(plan: PlanBody): string {
  const file: PlanFile = { digest: planDigest(plan), plan };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/** Why a file is not a plan this database made: the CLI exits 65 with this message. */
export class InvalidPlanError extends Error {
  override readonly name = 'InvalidPlanError';
  readonly exitCode = ExitCode.invalidPlan;
}

/**
 * A plan file's text read and checked on its own: JSON, the shape of a plan, and its
 * digest over its content. Whether this database made it is the store's to say (store.ts).
 */
export function readPlanFile(text: string, name: string): PlanFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidPlanError(`${name} is not JSON: it is not a plan file (make one with sweeper run --plan FILE)`);
  }
  const file = parsed as Partial<PlanFile> | null;
  const plan = file?.plan as Partial<PlanBody> | undefined;
  if (
    typeof file !== 'object' ||
    file === null ||
    typeof file.digest !== 'string' ||
    typeof plan !== 'object' ||
    plan.format !== PLAN_FORMAT ||
    typeof plan.id !== 'string' ||
    !Array.isArray(plan.steps)
  ) {
    throw new InvalidPlanError(
      `${name} is not a ${PLAN_FORMAT} plan file (one made by sweeper run --plan FILE or sweeper backfill … --plan FILE)`,
    );
  }
  if (planDigest(plan) !== file.digest) {
    throw new InvalidPlanError(
      `${name} was altered after sweeper wrote it (its content no longer matches its digest): ` +
        'nothing was applied; make a new plan with --plan',
    );
  }
  return file as PlanFile;
}

/** Fields of a finding that hold instants (ChargeFact.created, EffectFact.createdAt, recreate_claim's createdAt). */
const DATE_FIELDS = new Set(['created', 'createdAt', 'lockedUntil', 'updatedAt']);
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A finding as the plan keeps it: plain JSON, its instants as ISO 8601 text. */
export function findingToJson(finding: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(finding)) as Record<string, unknown>;
}

/** The inverse: the instants back to Dates, wherever they are in the finding and its repair. */
export function findingFromJson<T>(json: unknown): T {
  const revive = (value: unknown, key: string): unknown => {
    if (typeof value === 'string' && DATE_FIELDS.has(key) && ISO_INSTANT.test(value)) return new Date(value);
    if (Array.isArray(value)) return value.map((v) => revive(v, ''));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v, k)]));
    return value;
  };
  return revive(json, '') as T;
}
