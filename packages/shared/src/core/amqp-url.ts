/**
 * AMQP_URL's nodes (docs/CONFIGURATION.md, "Every service"): one URL, or several separated by
 * commas, the nodes of one RabbitMQ cluster. An entry that is only `host:port` takes the scheme,
 * credentials, vhost and query of the first, so a password is written once.
 */
export function amqpNodes(value: string): string[] {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('names no node');
  const first = new URL(entries[0]!);
  return entries.map((entry, i) => {
    if (i === 0 || hasScheme(entry)) return new URL(entry).toString();
    if (!/^(\[[0-9a-fA-F:]+\]|[^:/\s@]+)(:\d{1,5})?$/.test(entry))
      throw new Error(`"${entry}" is neither a URL nor host:port`);
    const node = new URL(first.toString());
    node.host = entry;
    return node.toString();
  });
}

/** Whether AMQP_URL's text names its nodes correctly (the config's check). */
export function isAmqpNodeList(value: string): boolean {
  try {
    amqpNodes(value);
    return true;
  } catch {
    return false;
  }
}

/** One line for the start log: which topology, never a password. */
export function describeAmqp(value: string): string {
  const nodes = amqpNodes(value);
  const hosts = nodes.map((n) => new URL(n).host).join(', ');
  return nodes.length === 1 ? `single node ${hosts}` : `cluster of ${nodes.length} nodes: ${hosts}`;
}

/** Whether a list entry is a whole URL (`scheme://…`) rather than `host:port` alone. */
export const hasScheme = (entry: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(entry);
