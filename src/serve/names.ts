/**
 * The name of a person, as the review page records it on every write (the audit's
 * `actor`): what they typed at sign-in, what the auth proxy's header says, or the
 * operator's SWEEPER_ACTOR. `sweeper` is the sweep's own name in the audit (its
 * automatic repairs and closures): a person may not take it, or their decisions would
 * read as automatic ones.
 */
export const MAX_NAME_LENGTH = 100;

/** The reserved actor of automatic repairs and closures (src/sweep/findings-store.ts). */
export const AUTOMATIC_ACTOR = 'sweeper';

/** The name, trimmed, or the problem with it (said without echoing the value). */
export function personName(text: string): { name: string } | { problem: string } {
  const name = text.normalize('NFC').trim();
  if (name === '') return { problem: 'is empty' };
  if ([...name].length > MAX_NAME_LENGTH) return { problem: `is longer than ${MAX_NAME_LENGTH} characters` };
  // Control and format characters (bidi overrides among them) would make one name look like another.
  if (/[\p{Cc}\p{Cf}]/u.test(name)) return { problem: 'contains control or formatting characters' };
  if (name.toLowerCase() === AUTOMATIC_ACTOR) {
    return { problem: `is "${AUTOMATIC_ACTOR}", the name of the sweep's own automatic actions` };
  }
  return { name };
}

/** Names compare without regard to case: "Alice" signing in is the resolver "alice". */
export function sameName(a: string, b: string): boolean {
  return a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase();
}
