import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, readMigrations } from '../../src/db/migrate.js';
import { SCHEMA_SNAPSHOT_PATH, schemaDumper, unifiedDiff, type SchemaDumper } from '../support/schema.js';

/**
 * migrations/schema.sql is the schema the migrations produce: a migration that changes
 * the schema without `npm run schema:snapshot` fails here, with the diff to commit.
 */
let dumper: SchemaDumper | undefined;
let snapshot: string;

beforeAll(async () => {
  // The test server, or (when no pg_dump here can dump it) a throwaway one that can be.
  dumper = await schemaDumper(inject('pgAdminUrl'));
  snapshot = await readFile(SCHEMA_SNAPSHOT_PATH, 'utf8');
});
afterAll(async () => {
  await dumper?.close();
});

/** The normalised dump of a database migrated with `dir` (default migrations/). */
async function dump(dir?: string): Promise<string> {
  if (!dumper) throw new Error('no pg_dump and server were set up');
  return dumper.dump(dir);
}

const compare = (dumped: string) =>
  unifiedDiff(snapshot, dumped, { before: 'migrations/schema.sql', after: 'the schema migrations/ produce' });

describe('the schema snapshot', () => {
  it('is what the migrations produce', async () => {
    const diff = compare(await dump());
    // The diff in the message, once: the assertion's own diff of the two texts would repeat it.
    expect(
      diff === '',
      `migrations/schema.sql differs from what the migrations produce (${dumper?.description}): ` +
        `run \`npm run schema:snapshot\` and commit it with the migration.\n${diff}`,
    ).toBe(true);
  });

  it('fails, showing the change, when a migration changes the schema and the snapshot is not renewed', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sweeper-migrations-'));
    try {
      const migrations = await readMigrations();
      for (const name of await readdir(DEFAULT_MIGRATIONS_DIR))
        await copyFile(path.join(DEFAULT_MIGRATIONS_DIR, name), path.join(dir, name));
      const next = String(migrations.length + 1).padStart(3, '0');
      await writeFile(path.join(dir, `${next}_payment_note.sql`), 'ALTER TABLE payments ADD COLUMN note text;\n');
      const diff = compare(await dump(dir));
      expect(diff).toMatch(/^\+\+\+ the schema migrations\/ produce$/m);
      expect(diff.split('\n').filter((line) => /^[-+][^-+]/.test(line))).toEqual(['+    note text,']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
