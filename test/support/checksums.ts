import type { Queryable } from '../../src/db/pool.js';

const TABLES = [
  'idempotency_keys',
  'payments',
  'stripe_charges',
  'recon_runs',
  'recon_watermarks',
  'recon_findings',
  'recon_repairs',
  'recon_refunds',
];

/** md5 of every row of every table, in a stable order, plus the partition list. */
export async function tableChecksums(db: Queryable): Promise<Record<string, string>> {
  const sums: Record<string, string> = {};
  for (const table of TABLES) {
    const { rows } = await db.query<{ sum: string | null }>(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS sum FROM ${table} t`,
    );
    sums[table] = rows[0]?.sum ?? 'empty';
  }
  const { rows } = await db.query<{ parts: string }>(
    `SELECT string_agg(c.relname, ',' ORDER BY c.relname) AS parts FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid`,
  );
  sums.partitions = rows[0]?.parts ?? '';
  return sums;
}
