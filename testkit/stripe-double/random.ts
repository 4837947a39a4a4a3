/** Seeded PRNG (mulberry32): fault injection and ids repeat from run to run with the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An id shaped like Stripe's: a prefix and 24 alphanumerics. */
export function randomId(prefix: string, random: () => number, length = 24): string {
  let id = `${prefix}_`;
  for (let i = 0; i < length; i += 1) id += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return id;
}
