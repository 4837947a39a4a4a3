import { formatAge } from './message.js';

/** An account's lags as an alert reports them (src/sweep/completeness.ts computes them). */
export interface LagStatus {
  lagging: boolean;
  watermarkLagSeconds: number | null;
  eventsLagSeconds: number | null;
  maxLagSeconds: number;
}

/** "watermark 3h 5m behind, events 12m behind (limit 2h)". */
export function describeLag(lag: LagStatus): string {
  const part = (name: string, seconds: number | null) =>
    seconds === null ? `${name} not read yet` : `${name} ${formatAge(seconds * 1000)} behind`;
  return `${part('watermark', lag.watermarkLagSeconds)}, ${part('events', lag.eventsLagSeconds)} (limit ${formatAge(lag.maxLagSeconds * 1000)})`;
}
