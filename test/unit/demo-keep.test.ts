import { describe, expect, it } from 'vitest';
import { keptLines } from '../../src/cli/commands/demo.js';

describe('sweeper demo --keep: how to reach the kept database', () => {
  it('the throwaway server: one working psql line, its own password in it', () => {
    const text = keptLines('postgres://postgres:sweeper-throwaway@127.0.0.1:41234/sweeper_demo_1', false);
    expect(text.match(/psql/g)).toHaveLength(1);
    expect(text).toContain("  psql 'postgres://postgres:sweeper-throwaway@127.0.0.1:41234/sweeper_demo_1'\n");
  });

  it('a server named by DATABASE_URL: the password you gave is left out, and the line says whose it is', () => {
    const text = keptLines('postgres://ops:hunter2@db.internal:5432/sweeper_demo_1', true);
    expect(text).not.toContain('hunter2');
    expect(text).toContain(
      "Connect with (the password of DATABASE_URL):\n  psql 'postgres://ops@db.internal:5432/sweeper_demo_1'\n",
    );
    expect(keptLines('postgres://postgres@127.0.0.1:5432/sweeper_demo_1', true)).toContain('Connect with:\n');
  });
});
