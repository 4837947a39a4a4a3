/**
 * The floor of a backfill (bench/e2e-unthrottled.ts): the least work any sweep of the
 * same charges must do. Every page of the window fetched from the double (untimed), each
 * decoded with JSON.parse (timed: wall, and this process's CPU), its charges turned into
 * mirror rows (untimed), and all the rows loaded with one COPY into a table shaped like
 * stripe_charges (LIKE … INCLUDING ALL: its columns, primary key and indexes, one
 * partition) (timed: wall, and the CPU of the server process that ran it, read from
 * /proc before and after, as cpu-parties.ts reads the sweep's).
 */
import { from as copyFrom } from 'pg-copy-streams';
import pg from 'pg';
import { log, round, type SeededSet } from './e2e-support.js';
import { processCpuS } from './cpu-parties.js';

export interface Floor {
  charges: number;
  pages: number;
  megabytes: number;
  fetch_s: number;
  decode_s: number;
  copy_s: number;
  floor_s: number;
  /** CPU of the decode: this process's user + system time across the JSON.parse calls. */
  decode_cpu_s: number;
  /** CPU of the COPY in PostgreSQL: its server process's user + system time; null when not readable. */
  copy_cpu_s: number | null;
  /** This process's CPU while it streamed the COPY (the client side; not in the floor's CPU). */
  copy_client_cpu_s: number;
  /** decode_cpu_s + copy_cpu_s: what the sweep's and PostgreSQL's CPU are compared with. */
  cpu_s: number | null;
  how: string;
  cpu_how: string;
}

type Column = { column_name: string; is_nullable: string; column_default: string | null };

export async function measureFloor(dbUrl: string, apiBase: string, set: SeededSet): Promise<Floor> {
  log(`floor: fetching and decoding the ${set.n.toLocaleString('en')} charges' pages`);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const { rows: columns } = await client.query<Column>(
      `SELECT column_name, is_nullable, column_default FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'stripe_charges' ORDER BY ordinal_position`,
    );
    const fetched = await fetchAndDecode(apiBase, set, columns);
    if (fetched.charges !== set.n) throw new Error(`floor: listed ${fetched.charges} charges, seeded ${set.n}`);

    await client.query('DROP TABLE IF EXISTS bench_copy_floor');
    await client.query('CREATE TABLE bench_copy_floor (LIKE stripe_charges INCLUDING ALL)');
    const backend = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    log(
      `floor: COPY of ${fetched.charges.toLocaleString('en')} rows (${round(fetched.chunks.reduce((n, c) => n + c.length, 0) / 1e6, 1)} MB of text)`,
    );
    const serverBefore = processCpuS(backend);
    const clientBefore = process.cpuUsage();
    const t2 = performance.now();
    await copyChunks(client, columns, fetched.chunks);
    const copyMs = performance.now() - t2;
    const clientCpu = process.cpuUsage(clientBefore);
    await client.query('SELECT 1'); // the COPY is over on the server too
    const serverAfter = processCpuS(backend);
    const copied = Number((await client.query('SELECT count(*) AS n FROM bench_copy_floor')).rows[0].n);
    await client.query('DROP TABLE bench_copy_floor');
    if (copied !== fetched.charges) throw new Error(`floor: COPY loaded ${copied} rows of ${fetched.charges}`);
    const copyCpu = serverBefore === null || serverAfter === null ? null : serverAfter - serverBefore;
    const floor: Floor = {
      charges: fetched.charges,
      pages: fetched.pages,
      megabytes: round(fetched.bytes / 1e6, 1),
      fetch_s: round(fetched.fetchMs / 1000, 2),
      decode_s: round(fetched.decodeMs / 1000, 2),
      copy_s: round(copyMs / 1000, 2),
      floor_s: round((fetched.decodeMs + copyMs) / 1000, 2),
      decode_cpu_s: round(fetched.decodeCpuUs / 1e6, 2),
      copy_cpu_s: copyCpu === null ? null : round(copyCpu, 2),
      copy_client_cpu_s: round((clientCpu.user + clientCpu.system) / 1e6, 2),
      cpu_s: copyCpu === null ? null : round(fetched.decodeCpuUs / 1e6 + copyCpu, 2),
      how: 'JSON.parse of each page body (utf-8 decode included) + one COPY FROM STDIN (pg-copy-streams) into LIKE stripe_charges INCLUDING ALL',
      cpu_how:
        "the decode's CPU is the benchmark process's user + system time across the JSON.parse calls (process.cpuUsage); the COPY's is the user + system time of the PostgreSQL server process that ran it (/proc/<pid>/stat before and after)",
    };
    log(
      `floor: decode ${floor.decode_s} s (CPU ${floor.decode_cpu_s} s) + COPY ${floor.copy_s} s (server CPU ${floor.copy_cpu_s} s) = ${floor.floor_s} s, CPU ${floor.cpu_s} s`,
    );
    return floor;
  } finally {
    await client.end();
  }
}

/** Every page of the set's window, decoded (timed) and turned into COPY text (untimed). */
async function fetchAndDecode(apiBase: string, set: SeededSet, columns: Column[]) {
  const fetchedAt = new Date().toISOString();
  const chunks: Buffer[] = [];
  let decodeMs = 0;
  let decodeCpuUs = 0;
  let fetchMs = 0;
  let pages = 0;
  let bytes = 0;
  let charges = 0;
  let after: string | undefined;
  const gte = Math.floor(set.from.getTime() / 1000);
  const lt = Math.floor(set.to.getTime() / 1000);
  for (;;) {
    const t0 = performance.now();
    const response = await fetch(
      `${apiBase}/v1/charges?limit=100&created[gte]=${gte}&created[lt]=${lt}${after ? `&starting_after=${after}` : ''}`,
      { headers: { authorization: 'Bearer sk_test_bench' } },
    );
    const body = Buffer.from(await response.arrayBuffer());
    fetchMs += performance.now() - t0;
    const cpu0 = process.cpuUsage();
    const t1 = performance.now();
    const page = JSON.parse(body.toString('utf8')) as { data: Array<Record<string, unknown>>; has_more: boolean };
    decodeMs += performance.now() - t1;
    const cpu = process.cpuUsage(cpu0);
    decodeCpuUs += cpu.user + cpu.system;
    pages += 1;
    bytes += body.length;
    charges += page.data.length;
    chunks.push(Buffer.from(page.data.map((c) => mirrorRow(c, columns, fetchedAt)).join('')));
    if (!page.has_more || page.data.length === 0) break;
    after = String(page.data.at(-1)?.id);
  }
  return { chunks, decodeMs, decodeCpuUs, fetchMs, pages, bytes, charges };
}

async function copyChunks(client: pg.Client, columns: Column[], chunks: Buffer[]): Promise<void> {
  const stream = client.query(
    copyFrom(`COPY bench_copy_floor (${columns.map((c) => `"${c.column_name}"`).join(', ')}) FROM STDIN`),
  );
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', () => resolve());
    let k = 0;
    const write = () => {
      while (k < chunks.length) {
        if (!stream.write(chunks[k++])) {
          stream.once('drain', write);
          return;
        }
      }
      stream.end();
    };
    write();
  });
}

/** One mirror row in COPY text format, from a charge as the API returns it. */
function mirrorRow(c: Record<string, unknown>, columns: Column[], fetchedAt: string): string {
  const metadata = (c.metadata ?? {}) as Record<string, string>;
  const value = (name: string): unknown => {
    switch (name) {
      case 'account':
        return 'platform';
      case 'charge_id':
        return c.id;
      case 'created':
        return new Date(Number(c.created) * 1000).toISOString();
      case 'payment_intent_id':
        return c.payment_intent;
      case 'tenant_id':
        return metadata.tenant_id ?? null;
      case 'idempotency_key':
        return metadata.idempotency_key ?? null;
      case 'reference':
        return metadata[process.env.SWEEPER_METADATA_REFERENCE_KEY ?? 'order_id'] ?? null;
      case 'card_fingerprint': {
        const details = c.payment_method_details as { card?: { fingerprint?: string } } | null | undefined;
        return details?.card?.fingerprint ?? null;
      }
      case 'fetched_at':
        return fetchedAt;
      default:
        if (name in c) return c[name];
        throw new Error(`floor: no value for stripe_charges.${name}; teach bench/floor.ts mirrorRow about it`);
    }
  };
  return `${columns.map((col) => text(value(col.column_name))).join('\t')}\n`;
}

function text(v: unknown): string {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  return String(v).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}
