import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureHeader, verifySignature } from '../../src/alerts/signature.js';

const SECRET = 'whsec_0123456789abcdef';
const BODY = '{"event":"findings.open","run_id":"run_1","account":"platform","unreconciled":2}';
const T = 1_794_830_400; // 2026-11-16T12:00:00Z
const at = (seconds: number) => new Date(seconds * 1000);

describe('webhook signature', () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>', () => {
    const expected = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
    expect(signatureHeader(SECRET, T, BODY)).toBe(`t=${T},v1=${expected}`);
  });

  it('verifies with the recipe, for a string or the raw bytes', () => {
    const header = signatureHeader(SECRET, T, BODY);
    expect(verifySignature(SECRET, header, BODY, { now: at(T + 10) })).toEqual({ valid: true, timestamp: T });
    expect(verifySignature(SECRET, header, Buffer.from(BODY), { now: at(T + 10) })).toEqual({
      valid: true,
      timestamp: T,
    });
  });

  it('rejects a tampered body, a wrong secret and a tampered timestamp', () => {
    const header = signatureHeader(SECRET, T, BODY);
    const opts = { now: at(T) };
    expect(verifySignature(SECRET, header, BODY.replace('"unreconciled":2', '"unreconciled":0'), opts)).toEqual({
      valid: false,
      reason: 'signature',
    });
    expect(verifySignature('whsec_another_secret_x', header, BODY, opts)).toEqual({
      valid: false,
      reason: 'signature',
    });
    expect(verifySignature(SECRET, header.replace(`t=${T}`, `t=${T + 1}`), BODY, { now: at(T + 1) })).toEqual({
      valid: false,
      reason: 'signature',
    });
  });

  it('rejects a replay older than the tolerance, and a timestamp too far ahead', () => {
    const header = signatureHeader(SECRET, T, BODY);
    expect(verifySignature(SECRET, header, BODY, { now: at(T + 300) }).valid).toBe(true);
    expect(verifySignature(SECRET, header, BODY, { now: at(T + 301) })).toEqual({ valid: false, reason: 'timestamp' });
    expect(verifySignature(SECRET, header, BODY, { now: at(T - 301) })).toEqual({ valid: false, reason: 'timestamp' });
    expect(verifySignature(SECRET, header, BODY, { now: at(T + 3_600), toleranceSeconds: 7_200 }).valid).toBe(true);
  });

  it('accepts any of several v1 signatures, as while a secret rotates', () => {
    const old = signatureHeader('whsec_the_old_secret_', T, BODY).split(',')[1];
    const header = `${signatureHeader(SECRET, T, BODY)},${old}`;
    expect(verifySignature(SECRET, header, BODY, { now: at(T) }).valid).toBe(true);
    expect(verifySignature('whsec_the_old_secret_', header, BODY, { now: at(T) }).valid).toBe(true);
  });

  it.each([undefined, '', 'v1=abc', `t=${T}`, `t=soon,v1=${'0'.repeat(64)}`, `t=${T},v1=nothex`])(
    'rejects a malformed header %j',
    (header) => {
      expect(verifySignature(SECRET, header, BODY, { now: at(T) })).toEqual({ valid: false, reason: 'malformed' });
    },
  );
});
