/**
 * What listing cost and met, for logs, metrics and the benchmark. One instance may be
 * shared by every lister of a run.
 */
export class StripeListCounters {
  /** HTTP attempts sent, retries included. */
  requests = 0;
  /** Answers with HTTP 429. */
  rateLimited = 0;
  /** Attempts repeated after a transient failure. */
  retries = 0;
  /** Answers with HTTP 5xx. */
  serverErrors = 0;
  /** Attempts with no HTTP answer (reset, refused, timeout). */
  connectionErrors = 0;
  /** Pages received. */
  pages = 0;
  charges = 0;
  malformed = 0;
  /** Malformed charges without a usable id: they cannot even become a finding, so the run exits 1. */
  unnamed = 0;
  /** Sub-windows split off to list concurrently. */
  splits = 0;
  /** Time from sending an attempt to its answer (or failure), summed: with `requests`, the mean latency. */
  latencyMs = 0;

  /** Mean time one request took so far; null before the first. */
  meanLatencyMs(): number | null {
    return this.requests === 0 ? null : this.latencyMs / this.requests;
  }

  snapshot(): CounterSnapshot {
    return {
      requests: this.requests,
      rateLimited: this.rateLimited,
      retries: this.retries,
      serverErrors: this.serverErrors,
      connectionErrors: this.connectionErrors,
      pages: this.pages,
      charges: this.charges,
      malformed: this.malformed,
      unnamed: this.unnamed,
      splits: this.splits,
    };
  }
}

export interface CounterSnapshot {
  requests: number;
  rateLimited: number;
  retries: number;
  serverErrors: number;
  connectionErrors: number;
  pages: number;
  charges: number;
  malformed: number;
  unnamed: number;
  splits: number;
}
