import type { K8sObject } from './render';

/**
 * Who may open a connection to whom under a set of NetworkPolicies, by the rules of the
 * Kubernetes API (networking.k8s.io/v1): a pod selected by some policy of a direction's type is
 * isolated in that direction and admits only what one of those policies' rules allows; a
 * connection needs both the source's egress and the destination's ingress. Ports are numbers.
 */
export type Peer =
  { pod: { namespace: string; labels: Record<string, string> } } | { ip: string /* outside the cluster */ };

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface PolicyPeer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: { cidr: string; except?: string[] };
}
interface Rule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: { port?: number | string; protocol?: string }[];
}
interface PolicySpec {
  podSelector: Selector;
  policyTypes?: string[];
  ingress?: Rule[];
  egress?: Rule[];
}

export function connectionAllowed(
  policies: K8sObject[],
  from: Peer,
  to: Peer,
  port: number,
  protocol = 'TCP',
): boolean {
  return (
    sideAllows(policies, from, 'Egress', to, port, protocol) &&
    sideAllows(policies, to, 'Ingress', from, port, protocol)
  );
}

function sideAllows(
  policies: K8sObject[],
  subject: Peer,
  direction: 'Ingress' | 'Egress',
  other: Peer,
  port: number,
  protocol: string,
): boolean {
  if (!('pod' in subject)) return true; // Outside the cluster: no policy applies.
  const applying = policies.filter((p) => {
    const spec = p.spec as PolicySpec;
    const types = spec.policyTypes ?? (spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);
    return (
      namespaceOf(p) === subject.pod.namespace &&
      types.includes(direction) &&
      selects(spec.podSelector, subject.pod.labels)
    );
  });
  if (applying.length === 0) return true;
  return applying.some((p) => {
    const spec = p.spec as PolicySpec;
    const rules = (direction === 'Ingress' ? spec.ingress : spec.egress) ?? [];
    return rules.some((rule) => {
      const peers = direction === 'Ingress' ? rule.from : rule.to;
      const peerOk =
        !peers || peers.length === 0 || peers.some((peer) => peerMatches(peer, other, namespaceOf(p)));
      const portOk =
        !rule.ports ||
        rule.ports.length === 0 ||
        rule.ports.some((rp) => {
          if (typeof rp.port === 'string')
            throw new Error(`${p.metadata.name}: named ports are not evaluated`);
          return (rp.protocol ?? 'TCP') === protocol && (rp.port === undefined || rp.port === port);
        });
      return peerOk && portOk;
    });
  });
}

function peerMatches(peer: PolicyPeer, other: Peer, policyNamespace: string): boolean {
  if (peer.ipBlock) {
    if (!('ip' in other)) return false;
    return (
      inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c) => inCidr(other.ip, c))
    );
  }
  if (!('pod' in other)) return false;
  const namespaceOk = peer.namespaceSelector
    ? selects(peer.namespaceSelector, { 'kubernetes.io/metadata.name': other.pod.namespace })
    : other.pod.namespace === policyNamespace;
  const podOk = peer.podSelector ? selects(peer.podSelector, other.pod.labels) : true;
  return namespaceOk && podOk;
}

export function selects(selector: Selector, labels: Record<string, string>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpression = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In':
        return key in labels && values.includes(labels[key]!);
      case 'NotIn':
        return !(key in labels) || !values.includes(labels[key]!);
      case 'Exists':
        return key in labels;
      case 'DoesNotExist':
        return !(key in labels);
      default:
        throw new Error(`unknown selector operator ${operator}`);
    }
  });
  return byLabel && byExpression;
}

const namespaceOf = (o: K8sObject) => o.metadata.namespace ?? 'default';

function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/') as [string, string];
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return (toInt(ip) & mask) >>> 0 === (toInt(base) & mask) >>> 0;
}

const toInt = (ip: string) => ip.split('.').reduce((n, octet) => ((n << 8) | Number(octet)) >>> 0, 0);
