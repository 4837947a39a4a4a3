/** A decoded Stripe form/query parameter: `a[b][0]=x` nests like JSON. */
export type FormValue = string | FormValue[] | FormParams;
export interface FormParams {
  [key: string]: FormValue;
}

/**
 * Decodes Stripe's bracket encoding (`metadata[tenant_id]=t`, `expand[0]=latest_charge`,
 * `expand[]=latest_charge`) as the SDK sends it in bodies and query strings.
 */
export function parseForm(text: string): FormParams {
  const root: FormParams = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const path = keyPath(rawKey);
    if (!path) continue;
    assign(root, path, value);
  }
  return root;
}

function keyPath(key: string): string[] | undefined {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match) return undefined;
  const rest = [...(match[2] ?? '').matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1] ?? '');
  return [match[1] as string, ...rest];
}

function assign(target: FormParams | FormValue[], path: string[], value: string): void {
  const [head, ...rest] = path as [string, ...string[]];
  const slot = Array.isArray(target) ? (head === '' ? target.length : Number(head)) : head;
  if (rest.length === 0) {
    setSlot(target, slot, value);
    return;
  }
  let child = getSlot(target, slot);
  if (typeof child !== 'object') {
    const next = rest[0];
    child = next === '' || /^\d+$/.test(next ?? '') ? [] : {};
    setSlot(target, slot, child);
  }
  assign(child, rest, value);
}

function getSlot(target: FormParams | FormValue[], slot: string | number): FormValue | undefined {
  return Array.isArray(target) ? target[slot as number] : (target as FormParams)[slot];
}

function setSlot(target: FormParams | FormValue[], slot: string | number, value: FormValue): void {
  if (Array.isArray(target)) target[Number(slot)] = value;
  else (target as FormParams)[String(slot)] = value;
}

/** Readers that keep handlers free of type tests. */
export const read = {
  string(params: FormParams, key: string): string | undefined {
    const value = params[key];
    return typeof value === 'string' ? value : undefined;
  },
  object(params: FormParams, key: string): FormParams | undefined {
    const value = params[key];
    return typeof value === 'object' && !Array.isArray(value) ? value : undefined;
  },
  strings(params: FormParams, key: string): string[] {
    const value = params[key];
    if (typeof value === 'string') return [value];
    if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
    if (typeof value === 'object') return Object.values(value).filter((v): v is string => typeof v === 'string');
    return [];
  },
};

/** Canonical JSON (sorted keys), for comparing the parameters of two requests. */
export function canonicalJson(value: FormValue): string {
  if (typeof value === 'string') return JSON.stringify(value);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- `a[5]=x` leaves holes in a parsed array
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? '')).join(',')}]`;
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as FormValue)}`)
    .join(',')}}`;
}

/** `params` without `keys`: an endpoint's own filters taken out before the common list parameters are parsed. */
export function omitParams(params: FormParams, keys: readonly string[]): FormParams {
  return Object.fromEntries(Object.entries(params).filter(([key]) => !keys.includes(key)));
}
