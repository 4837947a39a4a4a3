import { describe, expect, it } from 'vitest';
import { BRAKE_FLOOR, brakeTrip, MassRepairError, newBrakeState, recordBatch } from '../../src/sweep/brake.js';

/** docs/judgement.md "The repair brake", as a table of runs. */
describe('the repair brake', () => {
  it.each([
    ['49 repairs of 49 judged: below the floor, never', 49, 49, null],
    ['50 repairs of 50 judged: trips', 50, 50, 50],
    ['50 repairs of 1,000 judged (exactly 5%): does not trip', 50, 1_000, null],
    ['51 repairs of 1,000 judged (5.1%): trips', 51, 1_000, 51],
    ['260 repairs of 260 judged: trips', 260, 260, 260],
  ])('%s', (_name, repairs, judged, expected) => {
    const trip = brakeTrip(newBrakeState(), { claim_without_effect: repairs }, judged, 0.05);
    expect(trip?.repairs ?? null).toBe(expected);
  });

  it('counts the whole run: batches below the bound add up until one would pass it', () => {
    const state = newBrakeState();
    for (let batch = 0; batch < 4; batch += 1) {
      expect(brakeTrip(state, { orphan_charge: 12 }, 12, 0.05)).toBeNull();
      recordBatch(state, { orphan_charge: 12 }, 12);
    }
    expect(state).toEqual({ judged: 48, repairs: { orphan_charge: 48 } });
    expect(brakeTrip(state, { orphan_charge: 12 }, 12, 0.05)).toEqual({
      category: 'orphan_charge',
      repairs: 60,
      judged: 60,
      share: 0.05,
    });
  });

  it('is per category: many repairs spread over kinds do not trip it', () => {
    const planned = { claim_without_effect: 40, stale_claim: 40, orphan_charge: 40 };
    expect(brakeTrip(newBrakeState(), planned, 130, 0.05)).toBeNull();
  });

  it('names the category with the most repairs first', () => {
    const trip = brakeTrip(newBrakeState(), { stale_claim: 60, status_drift: 90 }, 100, 0.05);
    expect(trip?.category).toBe('status_drift');
  });

  it('a share of 100% trips only above every identity judged, which repairs cannot reach', () => {
    expect(brakeTrip(newBrakeState(), { status_drift: 500 }, 500, 1)).toBeNull();
  });

  it('says in one line what stopped, the likely causes and how to look', () => {
    const error = new MassRepairError(
      { category: 'claim_without_effect', repairs: 260, judged: 270, share: 0.05 },
      'acct_1',
    );
    expect(error.exitCode).toBe(1);
    expect(error.message).not.toContain('\n');
    expect(error.message).toMatch(/account acct_1 before repairing: 260 claim_without_effect repairs of 270/);
    expect(error.message).toMatch(/96\.3%.*SWEEPER_MAX_REPAIR_SHARE 5%/);
    expect(error.message).toMatch(/SWEEPER_STORED_ANSWER.*--dry-run.*sweeper report.*--allow-mass-repair/);
    expect(BRAKE_FLOOR).toBe(50);
  });
});
