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

/**
 * An https origin exactly as browsers send it in the Origin header: scheme, host and optional
 * non-default port; no path (not even "/"), query, fragment, credentials or wildcard.
 */
export function isHttpsOrigin(value: string): boolean {
  if (value.includes('*')) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return url.protocol === 'https:' && url.origin === value && url.hostname.length > 0;
}

export const COLOR_PATTERN = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/** A BCP 47 tag of the common shape: language, optional script, optional region (en, en-GB, zh-Hant-TW). */
export const LOCALE_PATTERN = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|[0-9]{3}))?$/;

export function isHttpsUrl(value: string): boolean {
  try {
    return new URL(value).protocol === 'https:';
  } catch {
    return false;
  }
}
