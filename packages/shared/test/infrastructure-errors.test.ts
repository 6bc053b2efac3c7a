import { infrastructureProblem } from '../src/core/infrastructure-errors';

const urls = { MONGO_URL: 'mongodb://app:s3cret@db.example:27017/mandates' };
const mongoError = (name: string, message: string) => Object.assign(new Error(message), { name });

describe('infrastructureProblem (docs/TROUBLESHOOTING.md)', () => {
  it('when MongoDB cannot be selected in time, then one line says it cannot be reached, without the password', () => {
    const line = infrastructureProblem(
      mongoError('MongoServerSelectionError', 'Server selection timed out after 5000 ms'),
      urls,
    );
    expect(line).toBe(
      'MONGO_URL: cannot reach MongoDB at mongodb://app:***@db.example:27017/mandates (timed out): check that MongoDB runs there and that this host can reach it (host, port, firewall, TLS)',
    );
  });

  it('when MongoDB answers but refuses a command at start, then the line says what it said, not that it is unreachable', () => {
    const line = infrastructureProblem(
      mongoError('MongoServerError', 'Index build failed: E11000 duplicate key\nmore detail'),
      urls,
    );
    expect(line).toBe(
      'MONGO_URL: MongoDB at mongodb://app:***@db.example:27017/mandates refused a command at start: Index build failed: E11000 duplicate key',
    );
  });

  it('when no node of a Redis Cluster answers at start, then the line names REDIS_CLUSTER_NODES and its nodes, not the unused host of REDIS_URL', () => {
    const err = new Error('Failed to refresh slots cache.');
    err.stack = `ClusterAllFailedError: ${err.message}\n    at node_modules/ioredis/built/cluster/index.js:1:1`;
    const line = infrastructureProblem(err, {
      REDIS_URL: 'redis://:s3cret@cluster-ignored/0',
      REDIS_CLUSTER_NODES: 'redis-cluster:6379',
    });
    expect(line).toBe(
      'REDIS_CLUSTER_NODES: cannot reach the Redis Cluster via redis-cluster:6379: check that Redis runs there and that this host can reach it (host, port, firewall, TLS)',
    );
  });
});
