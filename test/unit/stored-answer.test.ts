import { describe, expect, it } from 'vitest';
import type { ClaimFact } from '../../src/sweep/facts.js';
import { storedAnswer } from '../../src/sweep/judge/evidence.js';
import { mappedOutcome, parseStoredAnswerMapping, type StoredAnswerMapping } from '../../src/sweep/stored-answer.js';

/**
 * docs/judgement.md "Stored answers", row by row: what a completed claim's stored answer
 * says, read as its writer wrote it. `answerObject`, `answerStatus` and `answerMapped` are
 * what the facts query reads from the body (test/integration/stored-answers.test.ts runs
 * the same shapes through SQL).
 */

const completed = (over: Partial<ClaimFact>): ClaimFact => ({
  tenantId: 't',
  key: 'k',
  accountId: null,
  status: 'completed',
  attempt: 1,
  lockedUntil: null,
  createdAt: new Date('2026-11-10T10:00:00Z'),
  updatedAt: new Date('2026-11-10T10:00:00Z'),
  responseStatus: 200,
  responseOutcome: null,
  responseChargeId: null,
  answerObject: null,
  answerStatus: null,
  answerMapped: null,
  amount: null,
  currency: null,
  downstreamKey: 'd',
  ...over,
});

describe('what a stored answer says', () => {
  const rows: Array<[string, Partial<ClaimFact>, ReturnType<typeof storedAnswer>]> = [
    ['not completed (in flight)', { status: 'in_flight', responseStatus: null }, 'none'],
    ['released', { status: 'released', responseStatus: null }, 'none'],
    ["the library's outcome wins over the body", { responseOutcome: 'declined', answerObject: 'charge' }, 'failure'],
    ['response_outcome success', { responseOutcome: 'success', responseStatus: 201 }, 'success'],
    ['response_outcome pending_action', { responseOutcome: 'pending_action' }, 'pending_action'],
    ['response_outcome rejected', { responseOutcome: 'rejected', responseStatus: 400 }, 'failure'],
    ['the mapping wins over the status code', { responseStatus: 202, answerMapped: 'success' }, 'success'],
    ['the mapping says declined', { answerMapped: 'failure' }, 'failure'],
    ['HTTP 202', { responseStatus: 202 }, 'pending_action'],
    [
      'HTTP 202 even for a Charge object',
      { responseStatus: 202, answerObject: 'charge', answerStatus: 'succeeded' },
      'pending_action',
    ],
    ['HTTP 429', { responseStatus: 429 }, 'transient'],
    ['HTTP 408', { responseStatus: 408 }, 'transient'],
    ['HTTP 503', { responseStatus: 503 }, 'transient'],
    ['HTTP 402', { responseStatus: 402 }, 'failure'],
    ['HTTP 409', { responseStatus: 409 }, 'failure'],
    ['HTTP 302', { responseStatus: 302 }, 'failure'],
    [
      'a Charge object, succeeded',
      { answerObject: 'charge', answerStatus: 'succeeded', responseChargeId: 'ch_1' },
      'success',
    ],
    ['a Charge object, pending (money on its way)', { answerObject: 'charge', answerStatus: 'pending' }, 'success'],
    ['a Charge object, failed', { answerObject: 'charge', answerStatus: 'failed', responseStatus: 200 }, 'failure'],
    ['a PaymentIntent, succeeded', { answerObject: 'payment_intent', answerStatus: 'succeeded' }, 'success'],
    [
      'a PaymentIntent, requires_capture',
      { answerObject: 'payment_intent', answerStatus: 'requires_capture' },
      'success',
    ],
    [
      'a PaymentIntent, requires_action',
      { answerObject: 'payment_intent', answerStatus: 'requires_action' },
      'pending_action',
    ],
    ['a PaymentIntent, processing', { answerObject: 'payment_intent', answerStatus: 'processing' }, 'pending_action'],
    [
      'a PaymentIntent, requires_confirmation',
      { answerObject: 'payment_intent', answerStatus: 'requires_confirmation' },
      'pending_action',
    ],
    [
      'a PaymentIntent, requires_payment_method',
      { answerObject: 'payment_intent', answerStatus: 'requires_payment_method' },
      'failure',
    ],
    ['a PaymentIntent, canceled', { answerObject: 'payment_intent', answerStatus: 'canceled' }, 'failure'],
    ["a writer's own body naming no charge: 201 {state: paid}", { responseStatus: 201 }, 'success'],
    ["a writer's own body with status processing", { answerStatus: 'processing' }, 'pending_action'],
    ["a writer's own body with status pending", { answerStatus: 'pending' }, 'pending_action'],
    ["a writer's own body with status failed is still a 2xx success", { answerStatus: 'failed' }, 'success'],
    [
      "the library's shape (charge field) without an outcome",
      { responseChargeId: 'ch_1', answerStatus: 'succeeded' },
      'success',
    ],
  ];
  for (const [name, over, expected] of rows) {
    it(`${name} → ${expected}`, () => {
      expect(storedAnswer(completed(over))).toBe(expected);
    });
  }
});

describe('SWEEPER_STORED_ANSWER', () => {
  it('reads a charge path and an outcome field with its values', () => {
    expect(
      parseStoredAnswerMapping(
        '{"charge": "order.charge_ref", "outcome": "state", "success": ["paid"], "pending": ["awaiting_payment"], "declined": ["refused"]}',
      ),
    ).toEqual({
      charge: ['order', 'charge_ref'],
      outcome: ['state'],
      success: ['paid'],
      pending: ['awaiting_payment'],
      declined: ['refused'],
    });
  });
  it.each([
    ['not JSON', 'charge=order.id', /is not JSON/],
    ['neither field', '{"success": ["paid"]}', /neither "charge" nor "outcome"/],
    ['an outcome without values', '{"outcome": "state"}', /needs at least one of/],
    ['a path with a quote', `{"charge": "order.x'y"}`, /dotted path/],
    ['an unknown field', '{"charge": "id", "sucess": ["paid"]}', /sucess|Unrecognized/i],
    ['values that are not strings', '{"outcome": "state", "success": [1]}', /string/i],
  ])('refuses %s with a sentence saying what to write', (_name, text, message) => {
    const result = parseStoredAnswerMapping(text);
    expect(typeof result).toBe('string');
    expect(result).toMatch(message);
  });
  it('maps a value only when it is listed', () => {
    const mapping = parseStoredAnswerMapping(
      '{"outcome": "state", "success": ["paid"], "pending": ["open"], "declined": ["void"]}',
    ) as StoredAnswerMapping;
    expect(['paid', 'open', 'void', 'draft', null].map((v) => mappedOutcome(mapping, v))).toEqual([
      'success',
      'pending_action',
      'failure',
      null,
      null,
    ]);
    expect(mappedOutcome(null, 'paid')).toBeNull();
  });
});
