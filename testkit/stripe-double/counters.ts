/** Requests per endpoint ('GET /v1/charges') and the statuses they were answered with. */
export class RequestCounters {
  private readonly requests = new Map<string, number>();
  private readonly statuses = new Map<string, Map<string, number>>();

  record(endpoint: string): void {
    this.requests.set(endpoint, (this.requests.get(endpoint) ?? 0) + 1);
  }

  /** `status` is the HTTP status, or 'reset' for a connection dropped on purpose. */
  answered(endpoint: string, status: number | 'reset'): void {
    let byStatus = this.statuses.get(endpoint);
    if (!byStatus) this.statuses.set(endpoint, (byStatus = new Map()));
    byStatus.set(String(status), (byStatus.get(String(status)) ?? 0) + 1);
  }

  get(endpoint: string): number {
    return this.requests.get(endpoint) ?? 0;
  }

  /** How many requests to `endpoint` were answered with `status`. */
  status(endpoint: string, status: number | 'reset'): number {
    return this.statuses.get(endpoint)?.get(String(status)) ?? 0;
  }

  total(): number {
    let sum = 0;
    for (const n of this.requests.values()) sum += n;
    return sum;
  }

  snapshot(): Record<string, { requests: number; statuses: Record<string, number> }> {
    const out: Record<string, { requests: number; statuses: Record<string, number> }> = {};
    for (const [endpoint, requests] of this.requests) {
      out[endpoint] = { requests, statuses: Object.fromEntries(this.statuses.get(endpoint) ?? []) };
    }
    return out;
  }

  reset(): void {
    this.requests.clear();
    this.statuses.clear();
  }
}
