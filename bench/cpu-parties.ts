/**
 * Where a timed run's CPU went, by party (docs/performance.md "Running the benchmarks"):
 * the sweep process (from /usr/bin/time), PostgreSQL (every server process that exited
 * meanwhile: the run's backends, autovacuum workers), this benchmark process (the Stripe
 * double serving the pages; it does nothing else while it waits for the CLI), and the
 * whole machine's busy and idle time. On one machine the parties share its cores, so
 * (sweep + PostgreSQL) / cores is a wall time no schedule of that work can beat.
 * Linux only, and PostgreSQL only when it runs on this machine (the bench's own server);
 * otherwise the figures it cannot read are null.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { round } from './e2e-support.js';

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux this runs on). */
const TICKS = 100;

export interface CpuParties {
  cores: number;
  /** user + system of the sweep process (the CLI run measured). */
  sweep_s: number | null;
  /** Server processes that exited during the run (its backends, autovacuum workers); null when not readable. */
  postgres_s: number | null;
  /** This process: the Stripe double serving the run. */
  stripe_double_s: number;
  machine_busy_s: number | null;
  machine_idle_s: number | null;
  /** (sweep + PostgreSQL) / cores: the least wall time this work could take here, perfectly overlapped. */
  sweep_and_postgres_over_cores_s: number | null;
}

/**
 * Starts counting; the function returned stops and says who spent what (given the sweep's
 * own CPU). `database`: the run's, whose backends must have exited (and been reaped) before
 * PostgreSQL's CPU is read: the CLI's exit does not wait for its server processes.
 */
export async function countCpu(
  serverUrl: string,
  database: string,
): Promise<(sweepCpuS: number | null) => Promise<CpuParties>> {
  const postmaster = await postmasterPid(serverUrl);
  const machineBefore = machineTicks();
  const serverBefore = postmaster === null ? null : reapedTicks(postmaster);
  const selfBefore = process.cpuUsage();
  return async (sweepCpuS) => {
    const self = process.cpuUsage(selfBefore);
    const machineAfter = machineTicks();
    const serverAfter = postmaster === null ? null : await settledReapedTicks(serverUrl, database, postmaster);
    const postgres = serverBefore === null || serverAfter === null ? null : (serverAfter - serverBefore) / TICKS;
    const cores = cpus().length;
    return {
      cores,
      sweep_s: sweepCpuS,
      postgres_s: postgres === null ? null : round(postgres, 1),
      stripe_double_s: round((self.user + self.system) / 1e6, 1),
      machine_busy_s: machineBefore && machineAfter ? round((machineAfter.busy - machineBefore.busy) / TICKS, 1) : null,
      machine_idle_s: machineBefore && machineAfter ? round((machineAfter.idle - machineBefore.idle) / TICKS, 1) : null,
      sweep_and_postgres_over_cores_s:
        sweepCpuS === null || postgres === null ? null : round((sweepCpuS + postgres) / cores, 1),
    };
  };
}

/** The server's postmaster: the parent of a backend of ours, when that backend is on this machine. */
async function postmasterPid(url: string): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const backend = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    const stat = procStat(backend);
    return stat ? Number(stat[1]) : null; // field 4 of /proc/<pid>/stat: the parent
  } finally {
    await client.end();
  }
}

/**
 * The postmaster's reaped CPU once the run's backends are gone: none left connected to
 * `database` (at most 10 s), then two reads 50 ms apart that agree (at most 1 s).
 */
async function settledReapedTicks(url: string, database: string, postmaster: number): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 500; i += 1) {
      const { rows } = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [database],
      );
      if (rows[0]?.n === 0) break;
      await delay(20);
    }
  } finally {
    await client.end();
  }
  let last = reapedTicks(postmaster);
  for (let i = 0; i < 20; i += 1) {
    await delay(50);
    const now = reapedTicks(postmaster);
    if (now === last) break;
    last = now;
  }
  return last;
}

/**
 * CPU a live process of this machine has spent so far (utime + stime), in seconds; null
 * when it cannot be read (not Linux, or a server on another machine).
 */
export function processCpuS(pid: number): number | null {
  const stat = procStat(pid);
  return stat ? (Number(stat[11]) + Number(stat[12])) / TICKS : null; // fields 14 and 15
}

/** CPU of a process's children that have exited and been waited for (cutime + cstime), in ticks. */
function reapedTicks(pid: number): number | null {
  const stat = procStat(pid);
  return stat ? Number(stat[13]) + Number(stat[14]) : null; // fields 16 and 17
}

/** /proc/<pid>/stat's fields after the command name (which may hold spaces): [0] is field 3. */
function procStat(pid: number): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The machine's busy and idle ticks, all cores (/proc/stat's first line). */
function machineTicks(): { busy: number; idle: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] as string;
    // Steal (time the hypervisor gave to someone else) is neither: left out.
    const [user, nice, system, idle, iowait, irq, softirq] = line.trim().split(/\s+/).slice(1).map(Number);
    return {
      busy: (user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0),
      idle: (idle ?? 0) + (iowait ?? 0),
    };
  } catch {
    return null;
  }
}
