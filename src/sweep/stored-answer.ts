import { z } from 'zod';

/**
 * A writer's own stored-answer shape (SWEEPER_STORED_ANSWER): which JSON field names
 * the charge, and which field and values say how the request ended. Stripe's own
 * objects and the claim library's shape need no mapping (docs/judgement.md "Stored
 * answers"); this is for bodies such as `{"order": {"charge_ref": "ch_…"}, "state": "paid"}`.
 */
export interface StoredAnswerMapping {
  /** Path to the charge id, e.g. ['order', 'charge_ref']. */
  charge: string[] | null;
  /** Path to the field whose value says how the request ended, e.g. ['state']. */
  outcome: string[] | null;
  success: string[];
  pending: string[];
  declined: string[];
}

/** A path segment is safe to write into SQL as a constant (and an expression index can then match it). */
const SEGMENT = /^[A-Za-z0-9_$@-]{1,64}$/;

const path = (field: string) =>
  z
    .string()
    .transform((text, ctx) => {
      const segments = text.split('.');
      if (segments.length > 8 || !segments.every((s) => SEGMENT.test(s))) {
        ctx.addIssue({
          code: 'custom',
          message: `"${field}" must be a dotted path of up to 8 field names (letters, digits, _ $ @ -), such as "order.charge_id"`,
        });
        return z.NEVER;
      }
      return segments;
    })
    .optional();

const values = z.array(z.string().min(1).max(200)).max(50).optional();

const MAPPING = z
  .object({ charge: path('charge'), outcome: path('outcome'), success: values, pending: values, declined: values })
  .strict()
  .refine((m) => m.charge !== undefined || m.outcome !== undefined, {
    message: 'names neither "charge" nor "outcome": give at least one',
  })
  .refine(
    (m) =>
      m.outcome === undefined || (m.success?.length ?? 0) + (m.pending?.length ?? 0) + (m.declined?.length ?? 0) > 0,
    {
      message: '"outcome" needs at least one of "success", "pending" or "declined" (lists of values)',
    },
  );

/** Parses SWEEPER_STORED_ANSWER; returns the problem as a sentence when it is not a valid mapping. */
export function parseStoredAnswerMapping(text: string): StoredAnswerMapping | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'is not JSON; example: {"charge": "order.charge_id", "outcome": "state", "success": ["paid"], "pending": ["awaiting_payment"]}';
  }
  const parsed = MAPPING.safeParse(json);
  if (!parsed.success) return parsed.error.issues.map((i) => i.message).join('; ');
  const m = parsed.data;
  return {
    charge: m.charge ?? null,
    outcome: m.outcome ?? null,
    success: m.success ?? [],
    pending: m.pending ?? [],
    declined: m.declined ?? [],
  };
}

/** The outcome a mapping reads from the value at its `outcome` path; null when it has no say. */
export function mappedOutcome(
  mapping: StoredAnswerMapping | null,
  value: string | null,
): 'success' | 'pending_action' | 'failure' | null {
  if (!mapping || value === null) return null;
  if (mapping.success.includes(value)) return 'success';
  if (mapping.pending.includes(value)) return 'pending_action';
  if (mapping.declined.includes(value)) return 'failure';
  return null;
}

const literal = (segments: string[]) => `'{${segments.join(',')}}'::text[]`;

/**
 * SQL for the charge a claim's stored answer names: the mapping's field first, then the
 * shapes every writer shares (sweeper_answer_charge, in the migrations: `charge`, a Stripe
 * Charge's `id`, a PaymentIntent's `latest_charge`).
 */
export function answerChargeSql(alias: string, mapping: StoredAnswerMapping | null): string {
  const builtIn = `sweeper_answer_charge(${alias}.response_body)`;
  return mapping?.charge ? `coalesce(${alias}.response_body #>> ${literal(mapping.charge)}, ${builtIn})` : builtIn;
}

/** SQL for the value the mapping reads the outcome from (NULL without one). */
export function answerOutcomeSql(alias: string, mapping: StoredAnswerMapping | null): string {
  return mapping?.outcome ? `(${alias}.response_body #>> ${literal(mapping.outcome)})` : 'NULL::text';
}

/**
 * Claims whose stored answer names one of the charges of `charges` (alias sc): through
 * the index on sweeper_answer_charge, and, with a mapping naming a charge field, through
 * that field too (a second branch, so each can use its own index).
 */
export function answeredBySql(mapping: StoredAnswerMapping | null): string[] {
  const branches = ['sweeper_answer_charge(c.response_body) = sc.charge_id'];
  if (mapping?.charge) branches.push(`(c.response_body #>> ${literal(mapping.charge)}) = sc.charge_id`);
  return branches;
}
