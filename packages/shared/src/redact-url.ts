/** Where a URL points, without its credentials, for log lines (redis://u:***@host:6379/0). */
export function redactUrl(url: string, name = 'url'): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return `(unparseable ${name})`;
  }
}
