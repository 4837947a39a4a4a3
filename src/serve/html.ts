import { redact } from '../secrets.js';

/**
 * HTML built from templates whose every interpolated value is escaped unless it is
 * already `Html` (made by this module). Text from Stripe and from people (metadata,
 * keys, notes, reasons, tenant ids) therefore reaches the page as text whatever it
 * holds; no page concatenates markup by hand. Registered secrets are redacted on the
 * way, as everywhere else text leaves the process (src/secrets.ts).
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What a template accepts: markup, text to escape, numbers, nothing, or lists of those. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML: safe inside element content and inside double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return redact(text).replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value as string | number | boolean));
}

/** The tagged template: `html\`<td>${note}</td>\`` escapes `note`. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** Markup written by this program (an SVG built from numbers, a constant), never text from outside. */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/**
 * A URL of this site with its query: every value percent-encoded, empty ones left out.
 * Only paths starting with one `/` are accepted, so no link can point elsewhere.
 */
export function localUrl(
  path: string,
  query: Readonly<Record<string, string | number | null | undefined>> = {},
): string {
  if (!path.startsWith('/') || path.startsWith('//')) throw new Error(`not a local path: ${path}`);
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== '') params.set(key, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}
