import type { NavEntry, ReviewRoute } from './context.js';
import { html } from './html.js';

/**
 * Saved plans (`sweeper run --plan`, `sweeper apply`, `sweeper approve`; DESIGN.md §10)
 * are reviewed, approved and applied here once the plan tables exist. Until then the
 * navigation entry leads to a page saying so. This module is where they go: export the
 * plan pages and actions as routes (`resolver` access for approve and apply: the CSRF
 * token and the viewer as actor come with the route table, routes.ts).
 */
export const PLANS_NAV: NavEntry = { label: 'Plans', path: '/plans' };

export const planRoutes: ReviewRoute[] = [
  {
    method: 'GET',
    path: '/plans',
    access: 'reader',
    handler: async () => ({
      kind: 'page',
      title: 'Plans',
      body: html`<h1>Plans</h1>
        <section class="card">
          <p>
            Saved plans are not in this version of sweeper yet. When they are, the plans that
            <code>sweeper run --plan</code> writes are reviewed here step by step, approved by a second person, and
            applied.
          </p>
        </section>`,
    }),
  },
];
