import type { Queryable } from './pool.js';
import { ExitCode } from '../exit-codes.js';

/** `migrate` or `expire` run as a role that does not own the schema (the runtime role): exit 64. */
export class NotSchemaOwnerError extends Error {
  override readonly name = 'NotSchemaOwnerError';
  readonly exitCode = ExitCode.usage;
}

/**
 * `migrate` and `expire` change the schema (tables, partitions), which only the owner
 * of the tables may do. Asked before anything is changed, so the runtime role gets one
 * clear line instead of a "must be owner" error half-way through. A database without
 * the tables yet (the first `migrate`) has no owner to match: whoever creates them is it.
 */
export async function assertSchemaOwner(db: Queryable, command: 'migrate' | 'expire'): Promise<void> {
  const { rows } = await db.query<{ owner: string; me: string; ok: boolean }>(
    `SELECT pg_get_userbyid(c.relowner) AS owner, current_user AS me,
            pg_has_role(current_user, c.relowner, 'USAGE')
              OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS ok
       FROM pg_class c
      WHERE c.oid = to_regclass('idempotency_keys')`,
  );
  const row = rows[0];
  if (!row || row.ok) return;
  throw new NotSchemaOwnerError(ownerMessage(command, row.me, row.owner));
}

function ownerMessage(command: 'migrate' | 'expire', me: string, owner?: string): string {
  return (
    `sweeper ${command} changes the schema and ${me} does not own it${owner ? ` (${owner} does)` : ''}: ` +
    'run this as the schema owner (its DATABASE_URL, e.g. DATABASE_URL_OWNER), not as the runtime role'
  );
}
