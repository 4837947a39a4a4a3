import type { Logger } from '../log.js';
import { forOperator } from '../log.js';
import type { Queryable } from './pool.js';

/**
 * Planner statistics of the tables the sweep's statements read (docs/operations.md
 * "Planner statistics"). Rows bulk-loaded into a table (a restore, an import, a payment
 * service's own backfill) have no statistics until autovacuum's next analyse of it, and
 * a plan made meanwhile may read far more than it needs. A sweep analyses, before it
 * starts, each table (each partition of a partitioned one) whose statistics are stale;
 * `sweeper import-claims` analyses what it wrote. A role that may not analyse a table
 * (only its owner may, or on PostgreSQL 17 a role granted MAINTAIN) gets one log line
 * naming it, never a failure: the statements keep their index shape without statistics.
 */

/** The tables the sweep's per-slice statements read, by name (a partitioned table: its partitions). */
export const SWEEP_TABLES: readonly string[] = [
  'payments',
  'payment_refunds',
  'idempotency_keys',
  'idempotency_key_directory',
  'stripe_charges',
  'stripe_charge_keys',
  'stripe_charge_references',
  'recon_findings',
];

/** Stale: at least `minChanged` rows inserted, updated or deleted since the last analyse, and more than `share` of the rows it counted (never analysed: any share). */
export const STALE = Object.freeze({ minChanged: 1_000, share: 0.5 });

export interface Freshened {
  /** The tables (partitions) analysed. */
  analysed: string[];
  /** Tables this role may not analyse. */
  refused: string[];
}

interface Candidate {
  name: string;
  may_analyse: boolean;
}

/** Whether this role may analyse table `c`: its owner (or a member, a superuser), the database's owner, or on 17 MAINTAIN. */
const MAY_ANALYSE = `(pg_has_role(c.relowner, 'USAGE') OR pg_has_role(d.datdba, 'USAGE')
        OR CASE WHEN current_setting('server_version_num')::int >= 170000
                THEN has_table_privilege(c.oid, 'MAINTAIN') ELSE false END)`;

/** The stale tables (partitions) of the tables $1, by the rule above ($2, $3). */
const STALE_SQL = `
SELECT s.relid::regclass::text AS name, ${MAY_ANALYSE} AS may_analyse
  FROM pg_stat_user_tables s
  JOIN pg_class c ON c.oid = s.relid
  JOIN pg_database d ON d.datname = current_database()
 WHERE c.relkind = 'r'
   AND coalesce(pg_partition_root(s.relid), s.relid) IN (SELECT to_regclass(t) FROM unnest($1::text[]) AS t)
   AND s.n_mod_since_analyze >= $2
   AND s.n_mod_since_analyze > $3 * greatest(c.reltuples, 0)
 ORDER BY 1`;

/** The tables $1 themselves (a partitioned one: ANALYZE recurses into its partitions). */
const NAMED_SQL = `
SELECT c.oid::regclass::text AS name, ${MAY_ANALYSE} AS may_analyse
  FROM unnest($1::text[]) AS t
  JOIN pg_class c ON c.oid = to_regclass(t)
  JOIN pg_database d ON d.datname = current_database()
 ORDER BY 1`;

/** Before a sweep: analyses the stale tables (partitions) of `tables`. Never throws: what it could not do is logged. */
export async function freshenStatistics(
  db: Queryable,
  logger: Logger,
  tables: readonly string[] = SWEEP_TABLES,
): Promise<Freshened> {
  return analyse(db, logger, STALE_SQL, [tables, STALE.minChanged, STALE.share]);
}

/**
 * After a bulk load: analyses `tables` whatever the activity counters say (a load's last
 * transactions may not be counted yet when it ends). Never throws.
 */
export async function analyseTables(db: Queryable, logger: Logger, tables: readonly string[]): Promise<Freshened> {
  return analyse(db, logger, NAMED_SQL, [tables]);
}

/**
 * ANALYZE (SKIP_LOCKED: a table another process, or autovacuum, is analysing is left to
 * it) of the candidates this role may analyse; one log line naming those it may not.
 */
async function analyse(db: Queryable, logger: Logger, sql: string, params: unknown[]): Promise<Freshened> {
  const result: Freshened = { analysed: [], refused: [] };
  try {
    const { rows } = await db.query<Candidate>(sql, params);
    const allowed = rows.filter((r) => r.may_analyse).map((r) => r.name);
    result.refused = rows.filter((r) => !r.may_analyse).map((r) => r.name);
    if (result.refused.length > 0) {
      logger.warn(
        forOperator({ event: 'statistics_not_analysed', tables: result.refused }),
        `this role may not ANALYZE ${result.refused.join(', ')} (stale or bulk-loaded): its owner can, ` +
          'or autovacuum will; see docs/operations.md "Planner statistics"',
      );
    }
    if (allowed.length === 0) return result;
    const started = Date.now();
    await db.query(`ANALYZE (SKIP_LOCKED) ${allowed.join(', ')}`);
    result.analysed = allowed;
    logger.info(
      { event: 'statistics_refreshed', tables: allowed, duration_ms: Date.now() - started },
      'analysed tables whose planner statistics were stale or new',
    );
  } catch (error) {
    logger.warn(
      { event: 'statistics_not_refreshed', err: error },
      `could not check or refresh planner statistics: ${(error as Error).message}`,
    );
  }
  return result;
}
