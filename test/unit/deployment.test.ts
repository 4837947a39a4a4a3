import { readFile, readdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

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
      for (const v of secretVars) expect(get(v, 'valueFrom.secretKeyRef.name'), `${file} ${String(v.name)}`).toBe('sweeper');
      const job = jobSpecOf(doc);
      expect(typeof job.activeDeadlineSeconds, file).toBe('number');
      expect(job.backoffLimit ?? job.backoffLimitPerIndex, file).toBeGreaterThanOrEqual(1);
    }
  });

  it('scheduled sweeps never overlap, start late only within a deadline, and do not retry exit 3, 64 or 75', async () => {
    const cronJobs = (await manifests()).filter(({ doc }) => doc.kind === 'CronJob');
    for (const { file, doc } of cronJobs) {
      expect(get(doc, 'spec.concurrencyPolicy'), file).toBe('Forbid');
      expect(typeof get(doc, 'spec.startingDeadlineSeconds'), file).toBe('number');
    }
    const sweeps = cronJobs.filter(({ file }) => file !== 'maintenance-cronjob.yaml');
    for (const { file, doc } of sweeps) {
      const rules = get(jobSpecOf(doc), 'podFailurePolicy.rules') as Obj[];
      expect(rules.map((r) => get(r, 'onExitCodes.values')), file).toEqual([[3, 64, 75]]);
      expect(podSpecOf(doc).terminationGracePeriodSeconds, file).toBeGreaterThan(20); // > SWEEPER_SHUTDOWN_GRACE
    }
  });

  it('the sharded sweep is an Indexed Job passing its index as --shard I/N', async () => {
    const { doc } = (await manifests()).find((m) => m.file === 'sharded-cronjob.yaml')!;
    const job = jobSpecOf(doc);
    expect(job.completionMode).toBe('Indexed');
    expect(job.completions).toBe(job.parallelism);
    const [container] = podSpecOf(doc).containers as Obj[];
    expect(container!.args).toEqual(['run', '--json', '--shard', `$(JOB_COMPLETION_INDEX)/${job.completions}`]);
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
    expect(context.filter((f) => /(\.env|\.pem|\.key|secret)/i.test(f))).toEqual([]);
    expect(context).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src/cli/main.ts', 'jobs/Dockerfile']));
  });
});
