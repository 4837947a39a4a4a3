import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { parse } from 'csv-parse';
import { importClaims, type ClaimImportRow, type ImportProgress } from '../../claims/import.js';
import type { ResponseOutcome } from '../../claims/claim-store.js';
import { loadConfig } from '../../config.js';
import { checkout, type Pool } from '../../db/pool.js';
import { analyseTables } from '../../db/statistics.js';
import { parseInstant } from '../../time/instant.js';
import { UsageError, withDatabase, writeJson } from '../context.js';
import { ExitCode } from '../exit.js';
import { writeErrorLine } from '../exit.js';
import { forOperator } from '../../log.js';

/**
 * `sweeper import-claims`: a team adopting the sweeper loads its existing claims table,
 * from a CSV file or a query on the same database, in batches (src/claims/import.ts).
 */

const COLUMNS =
  'tenant_id, key, status, created_at, account_id, response_status, response_body, response_outcome, amount, currency, request_fingerprint';
const MAX_BATCH = 5_000;
/** The tables an import writes: analysed after it. */
const IMPORTED_TABLES = ['idempotency_keys', 'idempotency_key_directory'];

interface Flags {
  csv?: string;
  sql?: string;
  batch: string;
  json?: boolean;
}

export function registerImportClaims(program: Command): void {
  program
    .command('import-claims')
    .description('load existing claims (an adopted claims table) into idempotency_keys, in batches; safe to run again')
    .option(
      '--csv <file>',
      `a CSV file with a header row: ${COLUMNS} (only tenant_id, key, status and created_at are required)`,
    )
    .option(
      '--sql <query>',
      'a SELECT on this database returning those columns (read with a cursor, 1,000 rows at a time)',
    )
    .option('--batch <n>', `claims per transaction, 1..${MAX_BATCH}`, '1000')
    .option('--json', 'print one JSON object with the counts')
    .addHelpText(
      'after',
      `
Example:
  sweeper import-claims --csv legacy-claims.csv
  sweeper import-claims --sql "SELECT tenant AS tenant_id, idem_key AS key, 'completed' AS status, created_at, 200 AS response_status FROM legacy.idempotency"

A key that already has a claim is skipped, so a crashed import is resumed by running it
again. Rows older than SWEEPER_RETENTION are skipped (their claims would have expired);
rows that do not validate are listed on stderr with their line and skipped; exit 1 if any
were, 0 otherwise.`,
    )
    .action(async (flags: Flags) => {
      process.exitCode = await runImport(flags);
    });
}

/** Flags checked before anything is opened, then the import; returns the exit code. */
async function runImport(flags: Flags): Promise<number> {
  const config = loadConfig();
  const batchSize = Number(flags.batch);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
    throw new UsageError(`--batch ${flags.batch}: must be a whole number from 1 to ${MAX_BATCH}`);
  }
  if (Boolean(flags.csv) === Boolean(flags.sql))
    throw new UsageError('give exactly one of --csv <file> or --sql <query>');
  if (flags.csv) {
    const file = await stat(flags.csv).catch(() => null);
    if (!file?.isFile()) throw new UsageError(`--csv ${flags.csv}: not a readable file`);
  }
  return withDatabase(async ({ pool, logger }) => {
    const rejected: Array<{ line: number; reason: string }> = [];
    let last = Date.now();
    const result = await importClaims(pool, flags.csv ? csvRows(flags.csv) : sqlRows(pool, flags.sql as string), {
      batchSize,
      now: new Date(),
      retentionMs: config.retentionMs,
      leaseMs: config.claimLeaseMs,
      onBatch: (p: ImportProgress) => {
        if (Date.now() - last < 5_000) return;
        last = Date.now();
        logger.info(forOperator({ event: 'progress', ...p }), 'importing claims');
      },
      onRejected: (r) => {
        rejected.push(r);
        if (rejected.length <= 20) writeErrorLine(`line ${r.line}: ${r.reason}`);
      },
    });
    if (rejected.length > 20) writeErrorLine(`… and ${rejected.length - 20} more rows refused`);
    logger.info({ ...result }, 'import finished');
    // What it wrote gets planner statistics now, not at autovacuum's next pass (src/db/statistics.ts).
    if (result.imported > 0) await analyseTables(pool, logger, IMPORTED_TABLES);
    return printImport(result, Boolean(flags.json));
  }, config);
}

/** The counts on stdout, then the exit code: 1 when a row was refused. */
function printImport(result: Awaited<ReturnType<typeof importClaims>>, json: boolean): number {
  if (json)
    writeJson({
      read: result.read,
      imported: result.imported,
      existing: result.existing,
      out_of_retention: result.outOfRetention,
      rejected: result.rejected,
    });
  else {
    process.stdout.write(
      `read ${result.read}; imported ${result.imported}; already claimed ${result.existing}; ` +
        `older than SWEEPER_RETENTION ${result.outOfRetention}; refused ${result.rejected}\n`,
    );
  }
  if (result.rejected > 0) {
    writeErrorLine(
      `${result.rejected} row(s) refused (listed above with their line): fix them and run the import again; imported rows are kept`,
    );
    return ExitCode.failed;
  }
  return ExitCode.reconciled;
}

type Raw = Record<string, string | null | undefined>;

async function* csvRows(file: string): AsyncGenerator<ClaimImportRow> {
  const parser = createReadStream(file).pipe(
    parse({ columns: true, skip_empty_lines: true, trim: true, relax_column_count: false }),
  );
  let line = 1;
  for await (const record of parser as AsyncIterable<Raw>) {
    line += 1;
    yield toRow(record, line);
  }
}

async function* sqlRows(pool: Pool, query: string): AsyncGenerator<ClaimImportRow> {
  const client = await checkout(pool);
  let line = 0;
  try {
    await client.query('BEGIN READ ONLY');
    await client.query(`DECLARE sweeper_import NO SCROLL CURSOR FOR ${query}`);
    for (;;) {
      const { rows } = await client.query<Raw>('FETCH 1000 FROM sweeper_import');
      if (rows.length === 0) break;
      for (const row of rows) yield toRow(row, ++line);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw new UsageError(`--sql: ${(error as Error).message}`);
  } finally {
    client.release();
  }
}

function toRow(r: Raw, line: number): ClaimImportRow {
  const text = (v: unknown) => (v === null || v === undefined || v === '' ? null : String(v));
  const int = (v: unknown) => (text(v) === null ? null : Number(v));
  const created = r.created_at as unknown;
  const body = r.response_body as unknown;
  let responseBody: unknown = null;
  if (typeof body === 'string' && body !== '') {
    try {
      responseBody = JSON.parse(body);
    } catch {
      responseBody = body;
    }
  } else if (body !== null && body !== undefined) responseBody = body;
  return {
    line,
    tenantId: String(r.tenant_id ?? ''),
    key: String(r.key ?? ''),
    status: String(r.status ?? '') as ClaimImportRow['status'],
    createdAt: created instanceof Date ? created : (parseInstant(String(created ?? '')) ?? new Date(Number.NaN)),
    accountId: text(r.account_id),
    responseStatus: int(r.response_status),
    responseBody,
    responseOutcome: text(r.response_outcome) as ResponseOutcome | null,
    amount: int(r.amount),
    currency: text(r.currency)?.toLowerCase() ?? null,
    requestFingerprint: text(r.request_fingerprint),
  };
}
