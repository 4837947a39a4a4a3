import { readFile, readdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
type Obj = Record<string, unknown>;
const get = (o: unknown, p: string): unknown => p.split('.').reduce<unknown>((v, k) => (v as Obj | undefined)?.[k], o);

async function manifests(): Promise<Array<{ file: string; doc: Obj }>> {
  const dir = path.join(ROOT, 'jobs/k8s');
  const out: Array<{ file: string; doc: Obj }> = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(await readFile(path.join(dir, file), 'utf8'))) {
      expect(doc.errors, file).toEqual([]);
      out.push({ file, doc: doc.toJS() as Obj });
    }
  }
  return out;
}

function podSpecOf(doc: Obj): Obj {
  const kind = doc.kind;
  return (kind === 'CronJob' ? get(doc, 'spec.jobTemplate.spec.template.spec') : get(doc, 'spec.template.spec')) as Obj;
}
function jobSpecOf(doc: Obj): Obj {
  return (doc.kind === 'CronJob' ? get(doc, 'spec.jobTemplate.spec') : doc.spec) as Obj;
}
const containerOf = (doc: Obj): Obj => (podSpecOf(doc).containers as Obj[])[0]!;
const argsOf = (doc: Obj): string[] => containerOf(doc).args as string[];
const envOf = (doc: Obj): Obj[] => containerOf(doc).env as Obj[];
/** The podFailurePolicy rules on exit codes, as { action, codes }. */
function exitCodeRules(doc: Obj): Array<{ action: unknown; codes: unknown }> {
  const rules = (get(jobSpecOf(doc), 'podFailurePolicy.rules') ?? []) as Obj[];
  return rules.filter((r) => r.onExitCodes).map((r) => ({ action: r.action, codes: get(r, 'onExitCodes.values') }));
}

describe('Kubernetes manifests', () => {
  it('parse, and every workload runs non-root, read-only, with its secrets from a Secret', async () => {
    const workloads = (await manifests()).filter(({ doc }) => doc.kind === 'CronJob' || doc.kind === 'Job');
    expect(workloads.map((w) => w.file).sort()).toEqual([
      'backfill-job.yaml',
      'cronjob.yaml',
      'maintenance-cronjob.yaml',
      'migrate-job.yaml',
      'sharded-cronjob.yaml',
    ]);
    for (const { file, doc } of workloads) {
      const pod = podSpecOf(doc);
      expect(get(pod, 'restartPolicy'), file).toBe('Never');
      expect(get(pod, 'securityContext.runAsNonRoot'), file).toBe(true);
      expect(get(pod, 'securityContext.runAsUser'), file).not.toBe(0);
      const [container] = pod.containers as Obj[];
      expect(get(container, 'securityContext.allowPrivilegeEscalation'), file).toBe(false);
      expect(get(container, 'securityContext.readOnlyRootFilesystem'), file).toBe(true);
      const env = container!.env as Obj[];
      const secretVars = env.filter((e) => /DATABASE_URL|STRIPE_API_KEY|ROUTING_KEY|SECRET/.test(String(e.name)));
      expect(secretVars.length, file).toBeGreaterThan(0);
      for (const v of secretVars)
        expect(get(v, 'valueFrom.secretKeyRef.name'), `${file} ${String(v.name)}`).toBe('sweeper');
      const job = jobSpecOf(doc);
      expect(typeof job.activeDeadlineSeconds, file).toBe('number');
      expect(job.backoffLimit ?? job.backoffLimitPerIndex, file).toBeGreaterThanOrEqual(1);
    }
  });

  it('scheduled sweeps never overlap, start late only within a deadline, leave findings to the alerts and fail only failed runs', async () => {
    const cronJobs = (await manifests()).filter(({ doc }) => doc.kind === 'CronJob');
    for (const { file, doc } of cronJobs) {
      expect(get(doc, 'spec.concurrencyPolicy'), file).toBe('Forbid');
      expect(typeof get(doc, 'spec.startingDeadlineSeconds'), file).toBe('number');
    }
    const sweeps = cronJobs.filter(({ file }) => file !== 'maintenance-cronjob.yaml');
    expect(sweeps.map((s) => s.file).sort()).toEqual(['cronjob.yaml', 'sharded-cronjob.yaml']);
    for (const { file, doc } of sweeps) {
      // Open findings exit 0 (the sinks page); a failed run (1) is the only exit retried.
      expect(argsOf(doc), file).toEqual(expect.arrayContaining(['run', '--findings-exit', '0']));
      expect(argsOf(doc).indexOf('--findings-exit') + 1, file).toBe(argsOf(doc).indexOf('0'));
      const action = file === 'sharded-cronjob.yaml' ? 'FailIndex' : 'FailJob';
      expect(exitCodeRules(doc), file).toEqual([{ action, codes: [3, 64, 75] }]);
      expect(podSpecOf(doc).terminationGracePeriodSeconds, file).toBeGreaterThan(20); // > SWEEPER_SHUTDOWN_GRACE
    }
  });

  it('every Job ignores evictions and fails at once on a configuration error (64); the expiry does not retry it', async () => {
    for (const { file, doc } of (await manifests()).filter(({ doc }) => doc.kind !== 'Secret')) {
      const rules = get(jobSpecOf(doc), 'podFailurePolicy.rules') as Obj[];
      expect(rules, file).toContainEqual({
        action: 'Ignore',
        onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }],
      });
      expect(
        exitCodeRules(doc).flatMap((r) => r.codes),
        file,
      ).toContain(64);
      expect(
        exitCodeRules(doc).flatMap((r) => r.codes),
        file,
      ).not.toContain(1);
    }
    const expire = (await manifests()).find((m) => m.file === 'maintenance-cronjob.yaml')!;
    expect(exitCodeRules(expire.doc)).toEqual([{ action: 'FailJob', codes: [64, 75] }]);
  });

  it('no pod mounts a service-account token; one-off Jobs are cleaned up after a day', async () => {
    for (const { file, doc } of (await manifests()).filter(({ doc }) => doc.kind !== 'Secret')) {
      expect(podSpecOf(doc).automountServiceAccountToken, file).toBe(false);
      if (doc.kind === 'Job') expect(get(doc, 'spec.ttlSecondsAfterFinished'), file).toBe(86_400);
    }
  });

  it('the sharded sweep is an Indexed Job passing its index as --shard I/N, with every alert sink of the plain one', async () => {
    const all = await manifests();
    const { doc } = all.find((m) => m.file === 'sharded-cronjob.yaml')!;
    const job = jobSpecOf(doc);
    expect(job.completionMode).toBe('Indexed');
    expect(job.completions).toBe(job.parallelism);
    expect(job.backoffLimitPerIndex).toBeGreaterThanOrEqual(1);
    expect(argsOf(doc)).toEqual([
      'run',
      '--json',
      '--findings-exit',
      '0',
      '--shard',
      `$(JOB_COMPLETION_INDEX)/${job.completions}`,
    ]);
    const plain = all.find((m) => m.file === 'cronjob.yaml')!.doc;
    const sinks = envOf(plain).filter((e) => /^SWEEPER_(PAGERDUTY|SLACK|WEBHOOK)_/.test(String(e.name)));
    expect(sinks.map((e) => e.name)).toEqual(
      expect.arrayContaining([
        'SWEEPER_PAGERDUTY_ROUTING_KEY',
        'SWEEPER_SLACK_WEBHOOK_URL',
        'SWEEPER_WEBHOOK_URL',
        'SWEEPER_WEBHOOK_SECRET',
      ]),
    );
    for (const { file, doc: other } of all.filter((m) =>
      ['sharded-cronjob.yaml', 'backfill-job.yaml'].includes(m.file),
    )) {
      expect(envOf(other), file).toEqual(expect.arrayContaining(sinks));
    }
  });

  it('every sweep pod gets the memory and V8 settings the pod benchmark measures (bench/e2e-pod-memory.ts)', async () => {
    const all = await manifests();
    const sweeps = all.filter((m) => ['cronjob.yaml', 'sharded-cronjob.yaml', 'backfill-job.yaml'].includes(m.file));
    expect(sweeps).toHaveLength(3);
    const settings = sweeps.map(({ doc }) => ({
      memory: get(containerOf(doc), 'resources.limits.memory'),
      request: get(containerOf(doc), 'resources.requests.memory'),
      nodeOptions: envOf(doc).find((e) => e.name === 'NODE_OPTIONS')?.value,
    }));
    // The benchmark reads the CronJob's; the others must not drift from it.
    expect(settings[0]).toEqual({
      memory: '256Mi',
      request: '256Mi',
      nodeOptions: expect.stringMatching(/--max-old-space-size=\d+/),
    });
    for (const s of settings) expect(s).toEqual(settings[0]);
  });

  it('the backfill waits for a scheduled run (--wait) and leaves findings to the alerts', async () => {
    const { doc } = (await manifests()).find((m) => m.file === 'backfill-job.yaml')!;
    const args = argsOf(doc);
    expect(args[0]).toBe('backfill');
    expect(args[args.indexOf('--wait') + 1]).toBe('15m');
    expect(args[args.indexOf('--findings-exit') + 1]).toBe('0');
  });

  it('each manifest states the Kubernetes version it needs', async () => {
    const dir = path.join(ROOT, 'jobs/k8s');
    for (const file of (await readdir(dir)).filter((f) => f.endsWith('.yaml') && !f.startsWith('secret'))) {
      expect(await readFile(path.join(dir, file), 'utf8'), file).toMatch(/^# Needs Kubernetes 1\.29\+/m);
    }
  });
});

/**
 * The published Kubernetes JSON schemas of the oldest version we support (1.29),
 * strict flavour (unknown fields are errors), vendored with their provenance in
 * test/fixtures/kubernetes-json-schema/README.md.
 */
const SCHEMA_DIR = path.join(ROOT, 'test/fixtures/kubernetes-json-schema/v1.29.14-standalone-strict');
const SCHEMA_FILES: Record<string, string> = {
  'batch/v1 CronJob': 'cronjob-batch-v1.json',
  'batch/v1 Job': 'job-batch-v1.json',
  'v1 Secret': 'secret-v1.json',
};
const validators = new Map<string, ValidateFunction>();

async function validatorFor(doc: Obj): Promise<ValidateFunction> {
  const kind = `${String(doc.apiVersion)} ${String(doc.kind)}`;
  const file = SCHEMA_FILES[kind];
  if (!file) throw new Error(`no vendored schema for ${kind}: add it to ${SCHEMA_DIR}`);
  let validate = validators.get(file);
  if (!validate) {
    const schema = JSON.parse(await readFile(path.join(SCHEMA_DIR, file), 'utf8')) as Obj;
    delete schema.$schema; // "http://json-schema.org/schema#" names no draft ajv knows; the keywords are draft-04/07 alike
    // strict: false lets the schemas' x-kubernetes-* annotations through; the formats
    // are Kubernetes' own (int32, int64), checked for range rather than ignored.
    const ajv = new Ajv({ allErrors: true, strict: false });
    ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
    });
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
    ajv.addFormat('date-time', { type: 'string', validate: (s: string) => !Number.isNaN(Date.parse(s)) });
    validate = ajv.compile(schema);
    validators.set(file, validate);
  }
  return validate;
}

async function schemaErrors(doc: Obj): Promise<string[]> {
  const validate = await validatorFor(doc);
  if (validate(doc)) return [];
  return (validate.errors ?? []).map(
    (e: ErrorObject) =>
      `${e.instancePath || '/'} ${e.message ?? e.keyword}${e.keyword === 'additionalProperties' ? `: ${String(e.params.additionalProperty)}` : ''}`,
  );
}

describe('Kubernetes manifests against the Kubernetes 1.29 JSON schemas', () => {
  it('every document in jobs/k8s is valid', async () => {
    const all = await manifests();
    expect(all.length).toBe(6);
    for (const { file, doc } of all) expect(await schemaErrors(doc), file).toEqual([]);
  });

  it('a misspelled field anywhere is refused, with its path', async () => {
    for (const { file, doc } of await manifests()) {
      if (doc.kind === 'Secret') {
        expect(await schemaErrors({ ...doc, stringdata: doc.stringData }), file).toContain(
          '/ must NOT have additional properties: stringdata',
        );
        continue;
      }
      const broken = structuredClone(doc);
      const pod = podSpecOf(broken);
      const container = (pod.containers as Obj[])[0]!;
      container.imagePullPolicyy = 'Always';
      pod.automountServiceAcountToken = false;
      const prefix = doc.kind === 'CronJob' ? '/spec/jobTemplate/spec/template/spec' : '/spec/template/spec';
      expect(await schemaErrors(broken), file).toEqual(
        expect.arrayContaining([
          `${prefix} must NOT have additional properties: automountServiceAcountToken`,
          `${prefix}/containers/0 must NOT have additional properties: imagePullPolicyy`,
        ]),
      );
    }
  });

  it('a wrong type is refused, with its path', async () => {
    for (const { file, doc } of (await manifests()).filter(({ doc }) => doc.kind !== 'Secret')) {
      const broken = structuredClone(doc);
      const job = jobSpecOf(broken);
      job.activeDeadlineSeconds = '840';
      podSpecOf(broken).automountServiceAccountToken = 'false';
      const errors = await schemaErrors(broken);
      expect(
        errors.some((e) => /\/activeDeadlineSeconds must be (integer|number)/.test(e)),
        `${file}: ${errors.join('; ')}`,
      ).toBe(true);
      expect(
        errors.some((e) => /\/automountServiceAccountToken must be boolean/.test(e)),
        `${file}: ${errors.join('; ')}`,
      ).toBe(true);
    }
  });
});

describe('Docker image', () => {
  it('is multi-stage, installs production dependencies only and runs as a non-root user', async () => {
    const dockerfile = await readFile(path.join(ROOT, 'jobs/Dockerfile'), 'utf8');
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const user = /^USER (\S+)/m.exec(dockerfile)?.[1];
    expect(user).toBeDefined();
    expect(user?.split(':')[0]).not.toMatch(/^(0|root)$/);
  });

  it('the build context holds no test data, fixtures, benchmarks or secrets', async () => {
    const ignore = (await readFile(path.join(ROOT, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const toRegex = (pattern: string) =>
      new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
    const rules = ignore.map(toRegex);
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
    const context = tracked.filter((f) => !rules.some((r) => r.test(f) || r.test(path.basename(f))));
    expect(context.filter((f) => /^(test|fixtures|bench)\//.test(f))).toEqual([]);
    // Source modules may be about secrets (src/secrets.ts redacts them); data files may not be secrets.
    expect(context.filter((f) => !/^src\/.*\.ts$/.test(f) && /(\.env|\.pem|\.key|secret)/i.test(f))).toEqual([]);
    expect(context).toEqual(
      expect.arrayContaining(['package.json', 'package-lock.json', 'src/cli/main.ts', 'jobs/Dockerfile']),
    );
  });
});
