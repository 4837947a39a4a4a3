/**
 * Replaces every occurrence of each secret in `text`. Error messages from HTTP
 * clients can quote the URL they failed on, and the Slack URL is itself a
 * credential, so anything logged or returned passes through here.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longest first, so a secret containing another is replaced whole.
  for (const secret of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join('[redacted]');
  }
  return out;
}
