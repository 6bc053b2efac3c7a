import { Redis } from 'ioredis';
import { describeLimits } from './limits-suite';

/** The limits suite on the shared Redis, one node (test/integration/redis-cluster.test.ts runs it on a Cluster). */
const REDIS_HOST = '127.0.0.1';
const REDIS_PORT = 6379;
const url = `redis://${REDIS_HOST}:${REDIS_PORT}`;

describeLimits({
  name: 'real Redis',
  target: () => url,
  hashTags: false,
  client: () => new Redis(url),
  keys: async (pattern) => {
    const redis = new Redis(url);
    try {
      return await redis.keys(pattern);
    } finally {
      redis.disconnect();
    }
  },
  deleteKeys: async (pattern) => {
    const redis = new Redis(url);
    try {
      const found = await redis.keys(pattern);
      if (found.length) await redis.del(...found);
    } finally {
      redis.disconnect();
    }
  },
  node: { host: REDIS_HOST, port: REDIS_PORT },
});
