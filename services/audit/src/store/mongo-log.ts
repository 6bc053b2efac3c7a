import type { Document } from 'mongodb';
import { Schema, type Connection, type Model } from 'mongoose';
import {
  fromBase64Url,
  merkleHasher,
  perfectNodes,
  toBase64Url,
  type LeafRange,
  type NodeId,
} from '@mandate/shared/mandate';
import { type AuditEvent } from '@mandate/shared/events';
import { isDuplicateKeyError, queryShapesOf, type MongoQueryShape } from '@mandate/shared/data';
import type { StoredCheckpoint } from './event-store';
import { auditLeafHash } from './leaf-hash';

/**
 * The MongoDB half of the tenant logs (docs/API.md#proving-the-log): every perfect subtree's hash
 * of each tenant's RFC 9162 tree (`audit_log_nodes`), each tenant's size (`audit_log_heads`, for
 * the periodic checkpoints) and the signed checkpoints (`audit_checkpoints`). The leaves are the
 * stored events themselves (their `seq`, unique per tenant in `events`); a node is a pure function
 * of the leaves under it, so a node a replica has not written yet (it is behind, or it crashed
 * between storing its events and their nodes) is computed from its children, down to the events,
 * and written by whoever needs it: every replica writes the same value.
 */

interface NodeDoc {
  /** `${level}:${index}:${tenant_id}` */
  _id: string;
  tenant_id: string;
  level: number;
  index: number;
  /** base64url of the 32-byte hash */
  hash: string;
}

export const logNodeSchema = new Schema<NodeDoc>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    level: { type: Number, required: true },
    index: { type: Number, required: true },
    hash: { type: String, required: true },
  },
  { collection: 'audit_log_nodes', versionKey: false },
);

interface HeadDoc {
  /** The tenant id. */
  _id: string;
  size: number;
}

export const logHeadSchema = new Schema<HeadDoc>(
  { _id: { type: String, required: true }, size: { type: Number, required: true } },
  { collection: 'audit_log_heads', versionKey: false },
);

interface CheckpointDoc extends StoredCheckpoint {
  /** `${tenant_id}:${tree_size}`: one checkpoint per size, whichever replica signs it first. */
  _id: string;
}

export const checkpointSchema = new Schema<CheckpointDoc>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    tree_size: { type: Number, required: true },
    root_hash: { type: String, required: true },
    issued_at: { type: String, required: true },
    jws: { type: String, required: true },
  },
  { collection: 'audit_checkpoints', versionKey: false },
);
// latest, list (largest tree_size first, below a cursor) and get by size.
checkpointSchema.index({ tenant_id: 1, tree_size: -1 });

const nodeShapes = queryShapesOf('audit_log_nodes');
const headShapes = queryShapesOf('audit_log_heads');
const checkpointShapes = queryShapesOf('audit_checkpoints');

/** Every query of this module, for the index-coverage test. */
export const LOG_QUERY_SHAPES: MongoQueryShape[] = [
  nodeShapes.find('nodes by _id ($in)', ['_id']),
  headShapes.find('head by _id ($max)', ['_id']),
  headShapes.find('logHeads (every tenant, small)', []),
  checkpointShapes.find('saveCheckpoint (duplicate _id: already signed)', ['_id']),
  checkpointShapes.find('latestCheckpoint / listCheckpoints', ['tenant_id'], { sort: { tree_size: -1 } }),
  checkpointShapes.find('getCheckpoint', ['tenant_id', 'tree_size']),
];

const nodeKey = (tenantId: string, level: number, index: number) => `${level}:${index}:${tenantId}`;
const localKey = (level: number, index: number) => `${level}:${index}`;

/** Reads the events of given seqs (the leaves), as served, for nodes no one has written yet. */
export type LeafReader = (tenantId: string, seqs: number[]) => Promise<AuditEvent[]>;

export class MongoLog {
  readonly nodes: Model<NodeDoc>;
  readonly heads: Model<HeadDoc>;
  readonly checkpoints: Model<CheckpointDoc>;

  constructor(
    connection: Connection,
    private readonly readLeaves: LeafReader,
  ) {
    const model = <T>(name: string, schema: Schema<T>) =>
      (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
    this.nodes = model('AuditLogNode', logNodeSchema);
    this.heads = model('AuditLogHead', logHeadSchema);
    this.checkpoints = model('AuditCheckpoint', checkpointSchema);
  }

  async init(): Promise<void> {
    await Promise.all([this.nodes.init(), this.heads.init(), this.checkpoints.init()]);
  }

  /**
   * Writes the leaves just stored (leaf index = seq - 1, with their hashes) and every node they
   * complete, then raises the tenant's head. O(log n) per leaf: the nodes left of the batch that
   * the new ones need are read in one query.
   */
  async appended(tenantId: string, leaves: { index: number; hash: Uint8Array }[]): Promise<void> {
    if (leaves.length === 0) return;
    const known = new Map<string, Uint8Array>();
    for (const leaf of leaves) known.set(localKey(0, leaf.index), leaf.hash);
    // The nodes completed by these leaves, level by level, and the children they need from before.
    const created: NodeId[][] = [leaves.map((l) => ({ level: 0, index: l.index }))];
    const outside = new Map<string, NodeId>();
    for (let level = 1; ; level++) {
      const below = created[level - 1]!;
      const parents = new Map<number, NodeId>();
      for (const child of below)
        if (child.index % 2 === 1) parents.set(child.index >> 1, { level, index: child.index >> 1 });
      if (parents.size === 0) break;
      const belowSet = new Set(below.map((n) => n.index));
      for (const p of parents.values()) {
        const left = 2 * p.index;
        if (!belowSet.has(left)) outside.set(localKey(level - 1, left), { level: level - 1, index: left });
      }
      created.push([...parents.values()]);
    }
    const fetched = await this.resolve(tenantId, [...outside.values()]);
    for (const [k, v] of fetched) known.set(k, v);
    const docs: NodeDoc[] = leaves.map((l) => this.doc(tenantId, 0, l.index, l.hash));
    for (let level = 1; level < created.length; level++) {
      for (const node of created[level]!) {
        const hash = merkleHasher.nodeHash(
          known.get(localKey(level - 1, 2 * node.index))!,
          known.get(localKey(level - 1, 2 * node.index + 1))!,
        );
        known.set(localKey(level, node.index), hash);
        docs.push(this.doc(tenantId, level, node.index, hash));
      }
    }
    await this.write(docs);
    await this.raiseHead(tenantId, Math.max(...leaves.map((l) => l.index)) + 1);
  }

  /** Raises the tenant's head to `size` (never lowers it): what a run that stopped half-way missed. */
  async raiseHead(tenantId: string, size: number): Promise<void> {
    if (size === 0) return;
    await this.heads.updateOne({ _id: tenantId }, { $max: { size } }, { upsert: true }).exec();
  }

  /** The MTH of each range, from the perfect subtrees it splits into (read in one query). */
  async rangeHashes(tenantId: string, ranges: readonly LeafRange[]): Promise<Uint8Array[]> {
    const parts = ranges.map(([start, end]) => perfectNodes(start, end));
    const hashes = await this.resolve(tenantId, parts.flat());
    return parts.map((nodes) =>
      merkleHasher.rangeHash(nodes.map((n) => hashes.get(localKey(n.level, n.index))!)),
    );
  }

  async logHeads(): Promise<{ tenantId: string; size: number }[]> {
    const docs = await this.heads.find({}).lean<HeadDoc[]>().exec();
    return docs.map((d) => ({ tenantId: d._id, size: d.size }));
  }

  async saveCheckpoint(checkpoint: StoredCheckpoint): Promise<void> {
    try {
      await this.checkpoints.create({
        _id: `${checkpoint.tenant_id}:${checkpoint.tree_size}`,
        ...checkpoint,
      });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  async latestCheckpoint(tenantId: string): Promise<StoredCheckpoint | null> {
    const doc = await this.checkpoints
      .findOne({ tenant_id: tenantId })
      .sort({ tree_size: -1 })
      .lean<CheckpointDoc>()
      .exec();
    return doc ? fromCheckpointDoc(doc) : null;
  }

  async getCheckpoint(tenantId: string, treeSize: number): Promise<StoredCheckpoint | null> {
    const doc = await this.checkpoints
      .findOne({ tenant_id: tenantId, tree_size: treeSize })
      .lean<CheckpointDoc>()
      .exec();
    return doc ? fromCheckpointDoc(doc) : null;
  }

  async listCheckpoints(
    tenantId: string,
    q: { limit: number; beforeSize?: number },
  ): Promise<StoredCheckpoint[]> {
    const filter: Record<string, unknown> = { tenant_id: tenantId };
    if (q.beforeSize !== undefined) filter.tree_size = { $lt: q.beforeSize };
    const docs = await this.checkpoints
      .find(filter)
      .sort({ tree_size: -1 })
      .limit(q.limit + 1)
      .lean<CheckpointDoc[]>()
      .exec();
    return docs.map(fromCheckpointDoc);
  }

  /**
   * The hashes of these perfect subtrees: read, and those not written yet computed from their
   * children (recursively, down to the stored events) and written.
   */
  private async resolve(tenantId: string, ids: NodeId[]): Promise<Map<string, Uint8Array>> {
    const out = new Map<string, Uint8Array>();
    if (ids.length === 0) return out;
    const unique = new Map(ids.map((n) => [localKey(n.level, n.index), n]));
    const docs = await this.nodes
      .find({ _id: { $in: [...unique.values()].map((n) => nodeKey(tenantId, n.level, n.index)) } })
      .lean<NodeDoc[]>()
      .exec();
    for (const doc of docs) out.set(localKey(doc.level, doc.index), fromBase64Url(doc.hash)!);
    const missing = [...unique.entries()].filter(([k]) => !out.has(k)).map(([, n]) => n);
    if (missing.length === 0) return out;

    const computed: NodeDoc[] = [];
    const leaves = missing.filter((n) => n.level === 0);
    if (leaves.length > 0) {
      const events = await this.readLeaves(
        tenantId,
        leaves.map((n) => n.index + 1),
      );
      for (const event of events) {
        const hash = auditLeafHash(event);
        out.set(localKey(0, event.seq! - 1), hash);
        computed.push(this.doc(tenantId, 0, event.seq! - 1, hash));
      }
      const absent = leaves.find((n) => !out.has(localKey(0, n.index)));
      if (absent) throw new Error(`audit log of tenant ${tenantId}: no event with seq ${absent.index + 1}`);
    }
    const inner = missing.filter((n) => n.level > 0);
    if (inner.length > 0) {
      const children = await this.resolve(
        tenantId,
        inner.flatMap((n) => [
          { level: n.level - 1, index: 2 * n.index },
          { level: n.level - 1, index: 2 * n.index + 1 },
        ]),
      );
      for (const n of inner) {
        const hash = merkleHasher.nodeHash(
          children.get(localKey(n.level - 1, 2 * n.index))!,
          children.get(localKey(n.level - 1, 2 * n.index + 1))!,
        );
        out.set(localKey(n.level, n.index), hash);
        computed.push(this.doc(tenantId, n.level, n.index, hash));
      }
    }
    await this.write(computed);
    return out;
  }

  private doc(tenantId: string, level: number, index: number, hash: Uint8Array): NodeDoc {
    return {
      _id: nodeKey(tenantId, level, index),
      tenant_id: tenantId,
      level,
      index,
      hash: toBase64Url(hash),
    };
  }

  /** Nodes are a function of the leaves: one another replica wrote already holds the same hash. */
  private async write(docs: NodeDoc[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.nodes.collection.insertMany(docs as unknown as Document[], { ordered: false });
    } catch (err) {
      if (!onlyDuplicates(err)) throw err;
    }
  }
}

function onlyDuplicates(err: unknown): boolean {
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  if (writeErrors === undefined) return isDuplicateKeyError(err);
  const list = Array.isArray(writeErrors) ? writeErrors : [writeErrors];
  return list.length > 0 && list.every((e) => (e as { code?: number }).code === 11000);
}

function fromCheckpointDoc(doc: CheckpointDoc): StoredCheckpoint {
  return {
    tenant_id: doc.tenant_id,
    tree_size: doc.tree_size,
    root_hash: doc.root_hash,
    issued_at: doc.issued_at,
    jws: doc.jws,
  };
}
