import type { ReviewAuth } from './auth.js';
import type { NavEntry, Viewer } from './context.js';
import { html, type Html } from './html.js';

export interface LayoutArgs {
  title: string;
  body: Html;
  viewer: Viewer | null;
  auth: ReviewAuth;
  nav: readonly NavEntry[];
  /** The request's path: its navigation entry is marked as the current page. */
  path: string;
  csrfToken: () => string;
}

/** The page around every page: navigation, who is signed in and what they may do, the stylesheet. */
export function layout(args: LayoutArgs): Html {
  const { viewer } = args;
  const current = (entry: NavEntry) =>
    entry.path === '/' ? args.path === '/' || args.path.startsWith('/findings') : args.path.startsWith(entry.path);
  const nav = viewer
    ? args.nav.map(
        (entry) => html`<a href="${entry.path}" ${current(entry) ? html` aria-current="page"` : ''}>${entry.label}</a>`,
      )
    : [];
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${args.title} · sweeper</title>
        <link rel="stylesheet" href="/static/review.css" />
        <script src="/static/review.js" defer></script>
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/">sweeper <span>review</span></a>
          <nav>${nav}</nav>
          ${viewer ? whoIsHere(viewer, args.csrfToken) : ''}
        </header>
        ${
          args.auth.localActor !== null
            ? html`<p class="banner" role="note">
                Unauthenticated: started with <code>--insecure-local</code>. Anyone who can reach this port acts as
                <strong>${args.auth.localActor}</strong>.
              </p>`
            : ''
        }
        <main>${args.body}</main>
      </body>
    </html> `;
}

function whoIsHere(viewer: Viewer, csrfToken: () => string): Html {
  const role = viewer.canResolve
    ? html`<span class="badge resolver" title="may resolve, ignore and mark not a duplicate">resolver</span>`
    : html`<span class="badge reader" title="not in SWEEPER_UI_RESOLVERS: reads only">read-only</span>`;
  const signOut =
    viewer.via === 'session'
      ? html`<form method="post" action="/signout" class="inline">
          <input type="hidden" name="_csrf" value="${csrfToken()}" />
          <button type="submit" class="link">Sign out</button>
        </form>`
      : '';
  return html`<div class="who"><span class="name">${viewer.name}</span> ${role} ${signOut}</div>`;
}

/** An error page's body: what went wrong, in a sentence, and a way back. */
export function problemBody(status: number, message: string): Html {
  return html`<section class="card narrow">
    <h1>${status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : 'That did not work'}</h1>
    <p class="problem" role="alert">${message}</p>
    <p><a href="/">Back to the findings</a></p>
  </section>`;
}
