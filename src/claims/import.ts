import type { Pool } from '../db/pool.js';
import { inTransaction } from '../db/pool.js';
import { claimKey } from '../domain/identity.js';
import { downstreamKey } from './keys.js';
import { forgetStaleClaimKeys, type ResponseOutcome } from './claim-store.js';
import { DAY_MS } from '../time/units.js';

/**
 * Loads an existing claims table into `idempotency_keys` (docs/claim-library.md
 * "Importing existing claims"). Batches of `batchSize` rows, one transaction and one
 * INSERT each, so the cross-partition uniqueness check is per batch, never per row and
 * never for the whole file. A key that already has a claim is
 * skipped, not overwritten: an import can be run again after a crash, or over a file
 * that overlaps what is there, and ends the same. Rows outside the retention window
 * (no partition holds them) and rows that do not validate are counted and reported,
 * never written.
 */

export interface ClaimImportRow {
  /** 1-based, for messages. */
  line: number;
  tenantId: string;
  key: string;
  status: 'completed' | 'released' | 'in_flight';
  createdAt: Date;
  accountId: string | null;
  responseStatus: number | null;
  responseBody: unknown;
  responseOutcome: ResponseOutcome | null;
  amount: number | null;
  currency: string | null;
  /** The request body's fingerprint when the old table kept one; else any body with the key replays (as re-created claims). */
  requestFingerprint: string | null;
}

export interface ImportProgress {
  read: number;
  imported: number;
  /** Keys that already had a claim: left as they were. */
  existing: number;
  outOfRetention: number;
  rejected: number;
}

export interface RejectedRow {
  line: number;
  reason: string;
}

export interface ImportOptions {
  batchSize: number;
  now: Date;
  retentionMs: number;
  /** In-flight rows get this lease, already expired (their attempt is long gone). */
  leaseMs: number;
  onBatch?: (progress: ImportProgress) => void;
  onRejected?: (row: RejectedRow) => void;
  signal?: AbortSignal;
}

const PRINTABLE = /^[\x20-\x7E]{1,255}$/;
const PRINTABLE_NO_SPACE = /^[\x21-\x7E]{1,255}$/;
const OUTCOMES: ReadonlySet<string> = new Set(['success', 'pending_action', 'declined', 'rejected']);

/** Why a row cannot be a claim; null when it can. */
export function whyNotImportable(row: ClaimImportRow): string | null {
  if (!PRINTABLE_NO_SPACE.test(row.tenantId))
    return 'tenant_id must be 1-255 printable ASCII characters without spaces';
  if (!PRINTABLE.test(row.key)) return 'key must be 1-255 printable ASCII characters';
  if (!['completed', 'released', 'in_flight'].includes(row.status))
    return 'status must be completed, released or in_flight';
  if (Number.isNaN(row.createdAt.getTime())) return 'created_at is not a time with a zone (e.g. 2026-11-01T12:00:00Z)';
  if (row.accountId !== null && !/^acct_[A-Za-z0-9]+$/.test(row.accountId))
    return 'account_id must be empty (the platform) or acct_…';
  if (row.status === 'completed' && (row.responseStatus === null || !Number.isInteger(row.responseStatus))) {
    return 'a completed claim needs its response_status';
  }
  if (row.responseOutcome !== null && !OUTCOMES.has(row.responseOutcome))
    return 'response_outcome must be success, pending_action, declined or rejected';
  if (row.amount !== null && (!Number.isSafeInteger(row.amount) || row.amount <= 0))
    return 'amount must be a positive integer (minor units)';
  if (row.currency !== null && !/^[a-z]{3}$/.test(row.currency)) return 'currency must be three lower-case letters';
  return null;
}

export async function importClaims(
  pool: Pool,
  rows: AsyncIterable<ClaimImportRow>,
  options: ImportOptions,
): Promise<ImportProgress> {
  const progress: ImportProgress = { read: 0, imported: 0, existing: 0, outOfRetention: 0, rejected: 0 };
  const oldest = options.now.getTime() - options.retentionMs;
  let batch: ClaimImportRow[] = [];
  const seen = new Set<string>();
  const flush = async () => {
    if (batch.length === 0) return;
    const written = await insertBatch(pool, batch, options);
    progress.imported += written;
    progress.existing += batch.length - written;
    batch = [];
    seen.clear();
    options.onBatch?.({ ...progress });
  };
  for await (const row of rows) {
    options.signal?.throwIfAborted();
    progress.read += 1;
    const reason = whyNotImportable(row);
    if (reason) {
      progress.rejected += 1;
      options.onRejected?.({ line: row.line, reason });
      continue;
    }
    if (row.createdAt.getTime() > options.now.getTime() + DAY_MS) {
      progress.rejected += 1;
      options.onRejected?.({ line: row.line, reason: 'created_at is more than a day in the future' });
      continue;
    }
    if (row.createdAt.getTime() < oldest) {
      progress.outOfRetention += 1;
      continue;
    }
    const id = claimKey(row.tenantId, row.key);
    if (seen.has(id)) {
      progress.rejected += 1;
      options.onRejected?.({ line: row.line, reason: 'the same tenant and key appear twice in this batch' });
      continue;
    }
    seen.add(id);
    batch.push(row);
    if (batch.length >= options.batchSize) await flush();
  }
  await flush();
  return progress;
}

/** One batch: file its keys, insert those that had no claim, in one statement. */
async function insertBatch(pool: Pool, rows: ClaimImportRow[], options: ImportOptions): Promise<number> {
  const plan = JSON.stringify(
    rows.map((r) => ({
      tenant_id: r.tenantId,
      key: r.key,
      status: r.status,
      created_at: r.createdAt.toISOString(),
      account_id: r.accountId,
      response_status: r.responseStatus,
      response_body: r.responseBody ?? null,
      response_outcome: r.responseOutcome,
      amount: r.amount,
      currency: r.currency,
      fingerprint: r.requestFingerprint,
      downstream_key: downstreamKey(r.tenantId, r.key),
    })),
  );
  return inTransaction(pool, async (tx) => {
    await forgetStaleClaimKeys(
      tx,
      rows.map((r) => ({ tenant_id: r.tenantId, key: r.key })),
    );
    // Files the keys first (in key order, so two imports never deadlock): a key already
    // filed has a claim, which stays; a writer taking one of these keys meanwhile waits
    // for this transaction, then finds the imported claim.
    const { rowCount } = await tx.query(
      `WITH batch AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, key text, status text, created_at timestamptz,
              account_id text, response_status int, response_body jsonb, response_outcome text, amount bigint,
              currency text, fingerprint text, downstream_key text)
       ), filed AS (
         INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
         SELECT tenant_id, key, created_at FROM batch ORDER BY tenant_id, key
         ON CONFLICT (tenant_id, key) DO NOTHING
         RETURNING tenant_id, key
       )
       INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key,
                                     account_id, response_status, response_body, response_outcome, amount, currency,
                                     created_at, completed_at, updated_at)
       SELECT r.tenant_id, r.key, coalesce(r.fingerprint, sweeper_recreated_fingerprint()), r.status,
              CASE WHEN r.status = 'in_flight' THEN r.created_at + make_interval(secs => $2::double precision / 1000) END,
              1, r.downstream_key, r.account_id, r.response_status, r.response_body, r.response_outcome, r.amount,
              r.currency, r.created_at, CASE WHEN r.status = 'completed' THEN r.created_at END, r.created_at
         FROM batch r JOIN filed f ON f.tenant_id = r.tenant_id AND f.key = r.key`,
      [plan, options.leaseMs],
    );
    return rowCount ?? 0;
  });
}
