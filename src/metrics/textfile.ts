import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile } from 'node:fs/promises';

/**
 * node_exporter may read the file at any moment: write a temporary file beside it
 * (same filesystem, a name the collector ignores) and rename it over the target,
 * which readers see as all-or-nothing.
 */
export async function writeTextfileAtomically(file: string, content: string): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, content, { mode: 0o644 });
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
