import { describe, expect, it } from 'vitest';
import { exitCodeFor, findingsExitFrom, type AccountOutcome, type RunOutcome } from '../../src/cli/exit-decision.js';

const ok = (unreconciled = 0): AccountOutcome => ({ status: 'succeeded', unreconciled });
const outcome = (over: Partial<RunOutcome>): RunOutcome => ({
  accounts: [ok()],
  sweepFailed: false,
  unnamedCharges: 0,
  alertsFailed: 0,
  interrupted: false,
  findingsExit: 3,
  ...over,
});

describe('exitCodeFor', () => {
  it('0 when everything is reconciled, whatever findingsExit says', () => {
    expect(exitCodeFor(outcome({}))).toBe(0);
    expect(exitCodeFor(outcome({ findingsExit: 0 }))).toBe(0);
    expect(exitCodeFor(outcome({ accounts: [] }))).toBe(0); // nothing to sweep (an empty shard, all skipped)
  });

  it('open findings exit with findingsExit: 3 by default, 0 when the deployment says so', () => {
    expect(exitCodeFor(outcome({ accounts: [ok(), ok(2)] }))).toBe(3);
    expect(exitCodeFor(outcome({ accounts: [ok(), ok(2)], findingsExit: 0 }))).toBe(0);
  });

  it('a failure is 1 with or without findings, and with findingsExit 0 too', () => {
    for (const findingsExit of [0, 3] as const) {
      expect(exitCodeFor(outcome({ accounts: [ok(5), { status: 'failed', unreconciled: 0 }], findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ accounts: [{ status: 'interrupted', unreconciled: 1 }], findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ accounts: [ok(1)], alertsFailed: 1, findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ accounts: [ok()], interrupted: true, findingsExit }))).toBe(1);
    }
  });

  it('a failed sweep (SweepFailedError) is 1, even when every report it kept says succeeded', () => {
    for (const findingsExit of [0, 3] as const) {
      expect(exitCodeFor(outcome({ sweepFailed: true, findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ sweepFailed: true, accounts: [ok(4)], findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ sweepFailed: true, accounts: [], findingsExit }))).toBe(1);
    }
  });

  it('a charge Stripe listed without a usable id is 1: money no finding can name', () => {
    for (const findingsExit of [0, 3] as const) {
      expect(exitCodeFor(outcome({ unnamedCharges: 1, findingsExit }))).toBe(1);
      expect(exitCodeFor(outcome({ unnamedCharges: 2, accounts: [ok(3)], findingsExit }))).toBe(1);
    }
  });

  it('only ever answers 0, 1 or 3: 64 and 75 are errors thrown before there are results', () => {
    const codes = new Set<number>();
    for (const status of ['succeeded', 'interrupted', 'failed'] as const) {
      for (const unreconciled of [0, 1]) {
        for (const sweepFailed of [false, true]) {
          for (const unnamedCharges of [0, 1]) {
            for (const alertsFailed of [0, 1]) {
              for (const interrupted of [false, true]) {
                for (const findingsExit of [0, 3] as const) {
                  codes.add(
                    exitCodeFor({
                      accounts: [{ status, unreconciled }],
                      sweepFailed,
                      unnamedCharges,
                      alertsFailed,
                      interrupted,
                      findingsExit,
                    }),
                  );
                }
              }
            }
          }
        }
      }
    }
    expect([...codes].sort()).toEqual([0, 1, 3]);
  });
});

describe('findingsExitFrom', () => {
  it('defaults to 3; the flag wins over SWEEPER_FINDINGS_EXIT', () => {
    expect(findingsExitFrom(undefined, {})).toBe(3);
    expect(findingsExitFrom(undefined, { SWEEPER_FINDINGS_EXIT: '' })).toBe(3);
    expect(findingsExitFrom(undefined, { SWEEPER_FINDINGS_EXIT: '0' })).toBe(0);
    expect(findingsExitFrom('3', { SWEEPER_FINDINGS_EXIT: '0' })).toBe(3);
    expect(findingsExitFrom('0', { SWEEPER_FINDINGS_EXIT: '3' })).toBe(0);
  });

  it('refuses anything but 0 or 3 with exit 64, naming the flag or the variable', () => {
    expect(() => findingsExitFrom('1', {})).toThrow(/^--findings-exit must be 0 or 3 \(got "1"\)/);
    expect(() => findingsExitFrom(undefined, { SWEEPER_FINDINGS_EXIT: 'yes' })).toThrow(
      /^SWEEPER_FINDINGS_EXIT must be 0 or 3 \(got "yes"\)/,
    );
    try {
      findingsExitFrom('75', {});
    } catch (error) {
      expect((error as { exitCode?: number }).exitCode).toBe(64);
    }
    expect.assertions(3);
  });
});
