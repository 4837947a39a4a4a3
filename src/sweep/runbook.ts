import { FINDING_CATEGORY_DEFINITIONS, type FindingCategory, type RunbookLine } from './categories.js';

/**
 * One line per finding category: what it means, what the sweeper did and what a person
 * should do (the demo prints them). Defined with the category in categories.ts; the long
 * form is docs/operations.md "Runbook".
 */
export const RUNBOOK: Record<FindingCategory, RunbookLine> = Object.fromEntries(
  (Object.keys(FINDING_CATEGORY_DEFINITIONS) as FindingCategory[]).map((c) => {
    const { means, sweeper, person } = FINDING_CATEGORY_DEFINITIONS[c].runbook;
    return [c, { means, sweeper, person }];
  }),
) as Record<FindingCategory, RunbookLine>;
