/** SPEC §5: how a tenant's embeddable widget may be used and how it looks. */
export interface WidgetConfig {
  allowed_origins: string[];
  theme: { primary_color?: string; logo_url?: string };
  locale: string | null;
  /** null until the tenant first saves a configuration. */
  updated_at: string | null;
}

export const DEFAULT_WIDGET_CONFIG: WidgetConfig = {
  allowed_origins: [],
  theme: {},
  locale: null,
  updated_at: null,
};

export const MAX_ALLOWED_ORIGINS = 50;

/** A host name as WHATWG URL leaves it (lower case, IDN as punycode), an IPv4 address or a bracketed IPv6 one. */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;
/**
 * Spelled out literally, so the parser's forgiving forms (`https:host`, backslashes, stripped
 * tabs and newlines, leading spaces) never become a stored URL that differs from what was sent.
 */
const LITERAL_HTTPS = /^https:\/\/[^\s\\]+$/i;

function parseHttps(value: string): URL | null {
  if (!LITERAL_HTTPS.test(value) || /[\p{Cc}\p{Cf}]/u.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') return null;
  return HOST.test(url.hostname) ? url : null;
}

/**
 * An https origin as browsers send it in the Origin header: scheme, host and optional
 * non-default port; no path (not even "/"), query, fragment, credentials or wildcard. Answers
 * the normalised origin (host lower-cased, IDN as punycode), or null when not acceptable.
 */
export function normalizeHttpsOrigin(value: string): string | null {
  if (!/^https:\/\/[^/?#@*]+$/i.test(value) || /:443$/.test(value)) return null;
  return parseHttps(value)?.origin ?? null;
}

export function isHttpsOrigin(value: string): boolean {
  return normalizeHttpsOrigin(value) !== null;
}

export const COLOR_PATTERN = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/** A BCP 47 tag of the common shape: language, optional script, optional region (en, en-GB, zh-Hant-TW). */
export const LOCALE_PATTERN = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|[0-9]{3}))?$/;

/**
 * An https URL without credentials, normalised by the WHATWG parser (its href: quotes, spaces
 * and other unsafe characters percent-encoded, host lower-cased); null when not acceptable.
 */
export function normalizeHttpsUrl(value: string): string | null {
  return parseHttps(value)?.href ?? null;
}

export function isHttpsUrl(value: string): boolean {
  return normalizeHttpsUrl(value) !== null;
}
