import { describe, expect, it } from 'vitest';
import { disputeStage, newestDisputes } from '../../src/sweep/disputes.js';
import type { ChangePointer } from '../../src/sweep/provider.js';

/** docs/judgement.md "Disputes": the newest dispute event's status wins, whatever order the events come in. */

const pointer = (id: string, created: number, status: string, dispute = 'dp_1'): ChangePointer => ({
  id,
  type: 'charge.dispute.updated',
  created,
  chargeId: 'ch_1',
  dispute: { id: dispute, status },
});

describe('newestDisputes', () => {
  it('keeps the newest event of each dispute, in any order, duplicates included', () => {
    const events = [
      pointer('evt_b', 200, 'under_review'),
      pointer('evt_a', 100, 'needs_response'),
      pointer('evt_c', 300, 'won'),
      pointer('evt_c', 300, 'won'),
      pointer('evt_x', 150, 'warning_needs_response', 'dp_2'),
    ];
    for (const order of [events, [...events].reverse()])
      expect(
        newestDisputes(order)
          .map((d) => [d.disputeId, d.status])
          .sort(),
      ).toEqual([
        ['dp_1', 'won'],
        ['dp_2', 'warning_needs_response'],
      ]);
  });

  it('two events of one second: the later stage of the life wins', () => {
    expect(newestDisputes([pointer('evt_z', 100, 'lost'), pointer('evt_y', 100, 'needs_response')])[0]?.status).toBe(
      'lost',
    );
    expect(disputeStage('under_review')).toBeGreaterThan(disputeStage('needs_response'));
    expect(disputeStage('something_new')).toBe(0);
  });

  it('ignores events without a dispute or without a charge', () => {
    expect(newestDisputes([{ id: 'evt_1', type: 'charge.refunded', created: 1, chargeId: 'ch_1' }])).toEqual([]);
    expect(newestDisputes([{ ...pointer('evt_2', 1, 'won'), chargeId: null }])).toEqual([]);
  });
});
