/**
 * BENCH_MEMORY_LIMIT (`1G`, `512M`): run each timed process inside a memory cgroup with
 * that limit, as a pod's `resources.limits.memory` would. Node sizes V8's heap from the
 * limit of the cgroup it starts in, so peak RSS under a limit is not the unlimited
 * figure (docs/performance.md "Memory"). Needs root and a cgroup v1 memory
 * controller or cgroup v2 with the memory controller; says so otherwise.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MemoryLimit {
  /** As given, for the results. */
  limit: string;
  /** Write a pid here to move that process into the cgroup. */
  procs: string;
  remove(): void;
}

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

function parseMemoryLimit(text: string): number {
  const m = /^(\d+)\s*([MG])i?$/i.exec(text.trim());
  if (!m) throw new Error(`BENCH_MEMORY_LIMIT must look like 512M or 1G (got ${JSON.stringify(text)})`);
  return Number(m[1]) * (m[2]!.toUpperCase() === 'G' ? 1024 ** 3 : 1024 ** 2);
}

/** The limit BENCH_MEMORY_LIMIT asks for, its cgroup made; null when unset. */
export function memoryLimitFromEnv(env: NodeJS.ProcessEnv = process.env): MemoryLimit | null {
  const text = env.BENCH_MEMORY_LIMIT;
  return text ? makeMemoryLimit(text) : null;
}

/**
 * A memory cgroup limited to `text` (`256M`, `1G`), named after this process and `tag`
 * (a benchmark that runs some processes limited and some not makes its own).
 */
export function makeMemoryLimit(text: string, tag = 'env'): MemoryLimit {
  const bytes = parseMemoryLimit(text);
  const name = `sweeper-bench-${process.pid}-${tag}`;
  try {
    if (existsSync(path.join(V1, 'memory.limit_in_bytes'))) {
      const dir = path.join(V1, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(bytes));
      return { limit: text, procs: path.join(dir, 'cgroup.procs'), remove: () => rmdirSync(dir) };
    }
    if (readFileSync(path.join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) {
      writeFileSync(path.join(V2, 'cgroup.subtree_control'), '+memory');
      const dir = path.join(V2, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'memory.max'), String(bytes));
      return { limit: text, procs: path.join(dir, 'cgroup.procs'), remove: () => rmdirSync(dir) };
    }
  } catch (error) {
    throw new Error(
      `memory limit ${text} needs a memory cgroup this process may create (run as root): ${String(error)}`,
    );
  }
  throw new Error(`memory limit ${text}: this machine has no cgroup memory controller`);
}

/** What the cgroup saw: its peak usage (page cache included) and how often it hit the limit; null when unreadable. */
export function memoryLimitUsage(limit: MemoryLimit): { peak_mb: number | null; limit_hits: number | null } {
  const dir = path.dirname(limit.procs);
  const read = (file: string): number | null => {
    try {
      const text = readFileSync(path.join(dir, file), 'utf8');
      const value = file === 'memory.events' ? /^max (\d+)/m.exec(text)?.[1] : text.trim();
      return value === undefined ? null : Number(value);
    } catch {
      return null;
    }
  };
  const v1 = existsSync(path.join(dir, 'memory.max_usage_in_bytes'));
  const peak = v1 ? read('memory.max_usage_in_bytes') : read('memory.peak');
  return {
    peak_mb: peak === null ? null : Math.round(peak / 2 ** 20),
    limit_hits: v1 ? read('memory.failcnt') : read('memory.events'),
  };
}

/** `file args…` wrapped so that the process enters the cgroup before it starts (`exec`, same pid). */
export function insideLimit(limit: MemoryLimit, file: string, args: string[]): [string, string[]] {
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', limit.procs, file, ...args]];
}
