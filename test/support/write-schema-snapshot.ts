/**
 * `npm run schema:snapshot`: writes migrations/schema.sql from a database migrated here
 * and now, on the server in DATABASE_URL or a throwaway one (see schemaDumper). Run it
 * after changing a migration, and commit the result with it.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SCHEMA_SNAPSHOT_PATH, schemaDumper } from './schema.js';

const dumper = await schemaDumper(process.env.DATABASE_URL);
try {
  await writeFile(SCHEMA_SNAPSHOT_PATH, await dumper.dump());
  console.log(`wrote ${path.relative(process.cwd(), SCHEMA_SNAPSHOT_PATH)} with ${dumper.description}`);
} finally {
  await dumper.close();
}
