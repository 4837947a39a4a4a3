import { redact, registerSecret } from '../secrets.js';

/**
 * Replaces every occurrence of each secret in `text`, and of every secret the process
 * registered (src/secrets.ts). Error messages from HTTP clients can quote the URL
 * they failed on, and the Slack URL is itself a credential, so anything logged or
 * returned passes through here.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  for (const secret of secrets) registerSecret(secret);
  let out = redact(text);
  // Values too short for the registry are still replaced when a sink names them.
  for (const secret of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join('[redacted]');
  }
  return out;
}
