/** Moved: the charge model is the sweep's (src/sweep/provider.ts). Kept until every importer is updated. */
export type { MalformedCharge, NormalizedCharge } from '../../sweep/provider.js';
