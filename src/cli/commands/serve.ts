import type { Command } from 'commander';
import { loadConfig, loadReviewSettings, type Config } from '../../config.js';
import type { ProviderEvidence } from '../../sweep/provider.js';
import { osUser, stripeProviderFor, UsageError, withDatabase } from '../context.js';

/**
 * `sweeper serve`: the review page (docs/review.md), from src/serve/. Loaded only by
 * this command (a lazy import), so no other command pays for the web server's modules.
 */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'the review page: open findings with their evidence and audit trail, resolve / ignore / not a duplicate, saved plans, runs and charts',
    )
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .option('--port <n>', 'the port to listen on (0: any free port)', '8080')
    .option(
      '--insecure-local',
      'no sign-in, on a loopback address only: every write is recorded as SWEEPER_ACTOR or the OS user',
    )
    .addHelpText(
      'after',
      `
Authentication is required: SWEEPER_UI_TOKEN (a sign-in form: the shared token and the
person's name), or SWEEPER_UI_TRUSTED_HEADER from SWEEPER_UI_TRUSTED_PROXIES (an auth
proxy). SWEEPER_UI_RESOLVERS names who may change anything; everyone else reads. With
STRIPE_API_KEY the page re-reads Stripe when it applies a plan (releases and refunds
need it; without it they wait for sweeper apply).

Example:
  SWEEPER_UI_TOKEN=$(openssl rand -base64 32) SWEEPER_UI_RESOLVERS=alice,bob sweeper serve --port 8080
  sweeper serve --insecure-local`,
    )
    .action(async (flags: { host: string; port: string; insecureLocal?: boolean }) => {
      if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65_535)
        throw new UsageError(`--port ${flags.port}: expected a port number, 0 to 65535`);
      const config = loadConfig();
      const settings = loadReviewSettings();
      const serve = await import('../../serve/index.js');
      // Before connecting: without authentication it stops here (exit 64), having touched nothing.
      const auth = serve.reviewAuth(settings, {
        insecureLocal: Boolean(flags.insecureLocal),
        host: flags.host,
        osUser: osUser(),
      });
      await withDatabase(async ({ pool, logger }) => {
        const deps = { pool, config, settings, clock: () => new Date(), logger, evidence: stripesWord(config) };
        const server = await serve.startReviewServer(deps, auth, { host: flags.host, port: Number(flags.port) });
        process.stdout.write(`Review page: ${server.url}\n`);
        logger.info({ url: server.url, auth: serve.authDescription(auth) }, 'review page: listening');
        await new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        await server.close();
      }, config);
    });
}

/** Stripe's own word for applying plans from the page, when a key is configured (docs/plans.md). */
function stripesWord(config: Config): ProviderEvidence | null {
  if (!config.stripeApiKey) return null;
  return stripeProviderFor(config, config.stripeApiKey).evidence;
}
