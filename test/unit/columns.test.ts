import { describe, expect, it } from 'vitest';
import { alignColumns } from '../../src/cli/columns.js';
import { openFindingsLines } from '../../src/cli/commands/status.js';
import { formatReport } from '../../src/cli/commands/sweep.js';
import { emptyCounts } from '../../src/sweep/categories.js';
import type { SweepReport } from '../../src/sweep/sweep.js';

/** Where each line's `pattern` match starts: equal offsets mean the column lines up. */
const starts = (lines: string[], pattern: RegExp) => lines.map((l) => l.search(pattern));

describe('alignColumns', () => {
  it('pads text left-aligned and counts right-aligned, without trailing spaces', () => {
    expect(
      alignColumns(
        [
          ['a', 'bbb', '1'],
          ['cccc', 'd', '1234'],
        ],
        { right: [2] },
      ),
    ).toEqual(['a     bbb     1', 'cccc  d    1234']);
  });
});

describe('the category tables line up', () => {
  it('status: open findings per account and category, whatever the name and count widths', () => {
    const lines = openFindingsLines({
      platform: { unattributed_charge: 1, amount_mismatch: 12_345 },
      acct_1Nv0FGQ9RKHgCVdK: { stale_claim: 7 },
    });
    expect(lines).toHaveLength(3);
    expect(new Set(starts(lines, /(unattributed_charge|amount_mismatch|stale_claim)/)).size).toBe(1);
    expect(new Set(lines.map((l) => l.length)).size).toBe(1); // right-aligned counts end together
  });

  it('run: the category, found and repaired columns line up, also for large counts and a dry run', () => {
    for (const dry_run of [false, true]) {
      const report: SweepReport = {
        run_id: 'run_x',
        mode: 'run',
        account: 'platform',
        window: { from: '2026-11-01T00:00:00.000Z', to: '2026-11-01T01:00:00.000Z' },
        dry_run,
        charges_scanned: 123_456_789,
        malformed_charges: 0,
        unnamed_charges: 0,
        deferred_keys: 0,
        findings: { ...emptyCounts(), matched: 123_456_789, effect_without_charge: 3, stale_claim: 12 },
        repaired: { ...emptyCounts(), stale_claim: 12 },
        unreconciled: 3,
        duration_ms: 1,
        status: 'succeeded',
      };
      const table = formatReport(report)
        .split('\n')
        .filter((l) => /^ {2}\S/.test(l));
      expect(table.map((l) => l.trim().split(/\s+/)[0])).toEqual([
        'category',
        'matched',
        'stale_claim',
        'effect_without_charge',
      ]);
      expect(new Set(table.map((l) => l.length)).size).toBe(1); // the last (repaired) column is right-aligned: all rows end together
      // The found column is right-aligned too: it ends, in every row, one gap before the repaired column.
      const repairedWidth = (dry_run ? 'would repair' : 'repaired').length;
      for (const line of table) expect(line.slice(0, line.length - repairedWidth - 4), line).toMatch(/\S$/);
    }
  });
});
