/** Whether a host name (a URL's hostname, IPv6 in brackets or not) names this machine's loopback. */
export function isLoopbackName(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Whether a Host header (or a listen address) names loopback: localhost, 127.x.x.x or [::1], with
 * any port. The value must be a plain host[:port] (no user info, no path) before the URL parser
 * normalises it (`LOCALHOST`, `127.1`, `[0:0:0:0:0:0:0:1]`); anything else is not loopback.
 */
export function isLoopbackHost(value: string | undefined): boolean {
  if (!value) return false;
  // A bare IPv6 listen address (HOST=::1) is bracketed the way a Host header carries it.
  const host =
    value.includes(':') && !value.startsWith('[') && value.indexOf(':') !== value.lastIndexOf(':')
      ? `[${value}]`
      : value;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/.exec(host);
  if (!m) return false;
  try {
    return isLoopbackName(new URL(`http://${m[1]}`).hostname);
  } catch {
    return false;
  }
}
