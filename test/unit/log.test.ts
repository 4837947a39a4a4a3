import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

function capture(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
  };
}

describe('logger', () => {
  it('writes JSON with the run id and redacts keys and passwords wherever they are attached', () => {
    const out = capture();
    const logger = createLogger({ runId: 'run_123', destination: out.stream });
    logger.info(
      {
        stripeApiKey: 'sk_test_secret1',
        config: { databaseUrl: 'postgres://u:pw@h/db', apiKey: 'rk_test_secret2' },
        headers: { authorization: 'Bearer sk_test_secret3' },
      },
      'starting',
    );
    const [line] = out.lines();
    expect(line).toMatchObject({ run_id: 'run_123', msg: 'starting', stripeApiKey: '[redacted]' });
    expect(JSON.stringify(line)).not.toMatch(/secret|pw@/);
  });
});
