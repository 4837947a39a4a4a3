import { createHash } from 'node:crypto';

/**
 * A statement sent as a named, prepared statement: parsed and planned once per
 * connection, then run on its cached plan (PostgreSQL's plan cache picks a generic plan
 * once it costs no more than the custom ones). For the sweep's per-batch gather, whose
 * plans over the day-partitioned tables cost milliseconds each (docs/performance.md
 * "Planning"). The name is the text's digest, so one text has one name on every connection.
 */
const names = new Map<string, string>();

export function named(text: string, values: unknown[]): { name: string; text: string; values: unknown[] } {
  let name = names.get(text);
  if (name === undefined) {
    name = `sweeper_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return { name, text, values };
}
