/**
 * The header's "Go to id" box (docs/DASHBOARD.md, "Search"): every id the API hands out starts with
 * its kind (`mdt_`, `key_`, …), so the prefix alone says which page shows it. Pure, so the table is
 * tested without a browser.
 */

/** Where an id opens: a dashboard path, or why it opens nothing. */
export type IdDestination = { to: string } | { message: string };

interface IdKind {
  prefix: string;
  label: string;
  /** The page that shows one item of this kind; absent where the API has no read of one. */
  to?(id: string): string;
  /** Said instead of opening, where there is no page for one item. */
  why?: string;
}

const param = (path: string, name: string) => (id: string) =>
  `${path}?${new URLSearchParams({ [name]: id }).toString()}`;

export const ID_KINDS: readonly IdKind[] = [
  { prefix: 'mdt_', label: 'mandate', to: (id) => `/mandates/${encodeURIComponent(id)}` },
  { prefix: 'key_', label: 'API key', to: param('/api-keys', 'key') },
  { prefix: 'evt_', label: 'audit event', to: param('/audit', 'event') },
  { prefix: 'whe_', label: 'webhook endpoint', to: param('/webhooks', 'endpoint') },
  { prefix: 'ras_', label: 'role assignment', to: param('/access', 'assignment') },
  {
    prefix: 'whd_',
    label: 'webhook delivery',
    // The API reads deliveries per endpoint only (GET /v1/webhook-endpoints/{id}/deliveries).
    why: 'A webhook delivery is listed under its endpoint: open Webhooks, then the endpoint, to find it.',
  },
];

/** What the ids this box opens look like, for its hint and its "unknown id" message. */
export const KNOWN_PREFIXES = ID_KINDS.map((k) => `${k.prefix}… (${k.label})`).join(', ');

/**
 * The page that shows the item `input` names (trimmed; ids are lowercase, so a pasted id in capitals
 * still opens), or a message saying why none does.
 */
export function destinationOf(input: string): IdDestination {
  const id = input.trim().toLowerCase();
  if (id === '') return { message: 'Paste an id, e.g. mdt_… or key_….' };
  const kind = ID_KINDS.find((k) => id.startsWith(k.prefix) && id.length > k.prefix.length);
  if (!kind)
    return {
      message: `"${input.trim()}" is not an id this dashboard opens. Ids start with ${KNOWN_PREFIXES}.`,
    };
  if (!/^[a-z]+_[0-9a-z]+$/.test(id))
    return { message: `"${input.trim()}" is not a valid ${kind.label} id.` };
  return kind.to ? { to: kind.to(id) } : { message: kind.why! };
}
