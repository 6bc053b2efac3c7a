/**
 * @mandate/shared/data (layer 5 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * MongoDB and Redis adapters' shared parts. Imports the layers below (core … events).
 */

export { FilterIndexes } from './filter-indexes';
export { MongoOutboxSource } from './mongo-outbox-source';
export {
  connectMongo,
  insertOrRefuse,
  isDuplicateKeyError,
  markOutboxSent,
  type MongoQueryShape,
  type OutboxDoc,
  outboxQueryShapes,
  pageBefore,
  pendingOutboxEvents,
  pingMongo,
  pushOutbox,
  queryShapesOf,
  type StoredAs,
  WITHOUT_OUTBOX,
  withOutbox,
} from './mongo';
export {
  awaitReplica,
  describeRedis,
  failFastRedis,
  isCluster,
  newRedis,
  type RedisClient,
  redisClock,
  redisTarget,
  type RedisTarget,
  ReplicaNotAcknowledged,
  waitUntilReady,
} from './redis-target';
export { CLOCK_SYNC_MAX_RTT_MS, redisTime, SyncedClock, type TimeSource } from './synced-clock';
