import { seededRandom } from './random.js';

export interface FaultConfig {
  /** Fraction (0..1) of requests answered 429 rate_limit_error. */
  rate429?: number;
  /** Fraction answered 500 api_error. */
  rate500?: number;
  /** Fraction whose connection is reset (socket destroyed) with no answer. */
  rateReset?: number;
  /** Only these endpoints (e.g. 'GET /v1/charges'); default every endpoint. */
  endpoints?: readonly string[];
  /**
   * 'before' (default): the fault replaces the request, nothing happens. 'after': the
   * request is executed and then the answer is lost (500 or reset) — the case where a
   * charge exists at Stripe but the caller never heard of it.
   */
  phase?: 'before' | 'after';
  /** Seed of the draws, so a run repeats. */
  seed?: number;
}

export type Fault = 'none' | '429' | '500' | 'reset';

/** Draws, per request, whether and how it fails. */
export class FaultInjector {
  private config: FaultConfig | null = null;
  private random: () => number = seededRandom(1);
  /** Faults injected since the configuration was last set. */
  injected = { '429': 0, '500': 0, reset: 0 };

  set(config: FaultConfig | null): void {
    const total = (config?.rate429 ?? 0) + (config?.rate500 ?? 0) + (config?.rateReset ?? 0);
    if (total > 1 + 1e-9) throw new RangeError(`fault rates add up to ${total}, more than 1`);
    this.config = config;
    this.random = seededRandom(config?.seed ?? 1);
    this.injected = { '429': 0, '500': 0, reset: 0 };
  }

  get phase(): 'before' | 'after' {
    return this.config?.phase ?? 'before';
  }

  draw(endpoint: string): Fault {
    const config = this.config;
    if (!config || (config.endpoints && !config.endpoints.includes(endpoint))) return 'none';
    const roll = this.random();
    let edge = config.rate429 ?? 0;
    let fault: Fault = 'none';
    if (roll < edge) fault = '429';
    else if (roll < (edge += config.rate500 ?? 0)) fault = '500';
    else if (roll < (edge += config.rateReset ?? 0)) fault = 'reset';
    if (fault !== 'none') this.injected[fault] += 1;
    return fault;
  }
}
