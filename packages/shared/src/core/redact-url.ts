import { hasScheme } from './amqp-url';

/**
 * Where a URL points, without its credentials, for log lines (redis://u:***@host:6379/0). A list
 * of them (AMQP_URL's nodes, docs/CONFIGURATION.md, "Every service") is redacted entry by entry.
 */
export function redactUrl(url: string, name = 'url'): string {
  const one = (text: string) => {
    const u = new URL(text);
    if (u.password) u.password = '***';
    return u.toString();
  };
  try {
    return one(url);
  } catch {
    if (!url.includes(',')) return `(unparseable ${name})`;
    // Entries after the first may be host:port alone: kept as they are (they hold no password).
    try {
      return url
        .split(',')
        .map((entry, i) => (i === 0 || hasScheme(entry.trim()) ? one(entry.trim()) : entry.trim()))
        .join(',');
    } catch {
      return `(unparseable ${name})`;
    }
  }
}
