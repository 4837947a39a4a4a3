import { describe, expect, it } from 'vitest';
import { DEFAULT_CONCURRENCY } from '../../src/providers/stripe/list-charges.js';
import { listingConcurrency } from '../../src/providers/stripe/provider.js';

describe('listingConcurrency: sub-windows per listing when several slices are listed at once', () => {
  it('shares rate × latency × 2 requests in flight among the listings running', () => {
    // 25 req/s at 300 ms: 15 in flight.
    expect(listingConcurrency(25, 300, 1)).toBe(15);
    expect(listingConcurrency(25, 300, 2)).toBe(8);
    expect(listingConcurrency(25, 300, 15)).toBe(1); // a full prefetch: every listing pages by cursor alone
    expect(listingConcurrency(25, 300, 40)).toBe(1);
  });

  it('stays between 1 and the lister default, and assumes 300 ms before the first answer', () => {
    expect(listingConcurrency(100, 2_000, 1)).toBe(DEFAULT_CONCURRENCY);
    expect(listingConcurrency(1, 10, 1)).toBe(1);
    expect(listingConcurrency(25, null, 3)).toBe(5);
    expect(listingConcurrency(25, 300, 0)).toBe(15);
  });
});
