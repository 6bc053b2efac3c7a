import { mongo } from 'mongoose';

/**
 * The stand-in answers as MongoDB does where its lookup acceleration (a hash of equality fields)
 * could make it differ: a unique index holds across updates, numbers compare across types, and an
 * equality on a field matches inside arrays. Runs on MONGO_URL (the stand-in of jest's globalSetup,
 * or a real MongoDB, where every case holds by definition).
 */
describe('the MongoDB stand-in answers as MongoDB does', () => {
  let client: InstanceType<typeof mongo.MongoClient>;
  let db: ReturnType<InstanceType<typeof mongo.MongoClient>['db']>;

  beforeAll(async () => {
    const url = process.env.MONGO_URL;
    if (!url) throw new Error('MONGO_URL is not set: jest.config.js globalSetup starts the MongoDB stand-in');
    client = new mongo.MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
    await client.connect();
    db = client.db(`conformance_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`);
  });

  afterAll(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  it('when two updates set one value of a unique partial index, then the second is refused E11000', async () => {
    const c = db.collection<{ _id: string; t: string; n?: number }>('uniq');
    await c.createIndex({ t: 1, n: 1 }, { unique: true, partialFilterExpression: { n: { $exists: true } } });
    await c.insertMany([
      { _id: 'a', t: 'x' },
      { _id: 'b', t: 'x' },
    ]);
    // Looked up by n first, so the lookup hash of n exists before the updates change it.
    expect(await c.countDocuments({ t: 'x', n: 5 })).toBe(0);
    await c.updateOne({ _id: 'a', n: { $exists: false } }, { $set: { n: 5 } });
    await expect(c.updateOne({ _id: 'b', n: { $exists: false } }, { $set: { n: 5 } })).rejects.toMatchObject({
      code: 11000,
    });
    await expect(c.insertOne({ _id: 'c', t: 'x', n: 5 })).rejects.toMatchObject({ code: 11000 });
    expect(await c.find({ t: 'x', n: 5 }).toArray()).toEqual([{ _id: 'a', t: 'x', n: 5 }]);
  });

  it('when a filter compares a number, then an int and a double of one value match alike', async () => {
    const c = db.collection<{ _id: string; n: number | mongo.Double }>('numbers');
    await c.insertMany([
      { _id: 'int', n: 7 },
      { _id: 'double', n: new mongo.Double(7) },
      { _id: 'other', n: 8 },
    ]);
    const ids = async (filter: object) => (await c.find(filter).toArray()).map((d) => d._id).sort();
    expect(await ids({ n: 7 })).toEqual(['double', 'int']);
    expect(await ids({ n: { $in: [7, 8] } })).toEqual(['double', 'int', 'other']);
  });

  it('when a field holds an array, then an equality on it matches a member, as MongoDB does', async () => {
    const c = db.collection<{ _id: string; tag: string | string[] }>('arrays');
    await c.insertMany([
      { _id: 'one', tag: 'a' },
      { _id: 'many', tag: ['a', 'b'] },
      { _id: 'none', tag: 'c' },
    ]);
    const ids = async (filter: object) => (await c.find(filter).toArray()).map((d) => d._id).sort();
    expect(await ids({ tag: 'a' })).toEqual(['many', 'one']);
    expect(await ids({ tag: { $in: ['b'] } })).toEqual(['many']);
  });
});
