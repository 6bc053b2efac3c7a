import { Schema } from 'mongoose';
import type { MongoQueryShape } from '@mandate/shared/data';
import { declaredIndexes, uncoveredQueries } from '@mandate/shared/testing';
import { MONGO_SERVICES, collectionOf } from '../../scripts/mongo-indexes';

/**
 * Every query the Mongo adapters declare is served by a declared index, read from the schemas
 * (ESR: equality fields first, then the sort, then ranges). The stand-in has no query planner,
 * so this is where a missing index shows up before production.
 */
describe('MongoDB index coverage', () => {
  // Each service's schemas by collection, and the queries its adapters declare (the same list
  // `npm run docs:indexes` writes into OPERATIONS.md).
  const adapters: [string, Record<string, Schema>, MongoQueryShape[]][] = MONGO_SERVICES.map((m) => [
    m.service,
    Object.fromEntries(m.schemas.map((schema) => [collectionOf(schema), schema])),
    m.shapes,
  ]);

  it.each(adapters)(
    'when the %s adapter declares its queries, then every one has an index whose prefix serves it',
    (_name, schemas, shapes) => {
      expect(shapes.length).toBeGreaterThan(0);
      expect(shapes.filter((s) => !(s.collection in schemas)).map((s) => s.collection)).toEqual([]);
      expect(uncoveredQueries(declaredIndexes(schemas), shapes)).toEqual([]);
    },
  );

  describe('the coverage rule itself', () => {
    const schema = new Schema({ tenant_id: String, state: String, id: String, at: Date, subject: String });
    schema.index({ tenant_id: 1, state: 1, id: -1 });
    schema.index({ tenant_id: 1, subject: 1 }, { partialFilterExpression: { state: 'active' } });
    const indexes = declaredIndexes({ things: schema });
    const shape = (s: Partial<MongoQueryShape>): MongoQueryShape => ({
      query: 'q',
      collection: 'things',
      equality: [],
      ...s,
    });

    it('when equality then sort match the leading keys, in either direction, then the query is served', () => {
      expect(
        uncoveredQueries(indexes, [
          shape({ equality: ['state', 'tenant_id'], sort: { id: -1 } }),
          shape({ equality: ['tenant_id', 'state'], sort: { id: 1 } }),
          shape({ equality: ['tenant_id'] }),
          shape({ equality: ['_id'] }),
        ]),
      ).toEqual([]);
    });

    it('when the sort skips an index key, or the equality field is not leading, then the query is reported', () => {
      expect(
        uncoveredQueries(indexes, [
          shape({ query: 'skips state', equality: ['tenant_id'], sort: { id: -1 } }),
          shape({ query: 'subject alone', equality: ['subject'] }),
          shape({ query: 'range before sort', equality: ['tenant_id', 'state'], sort: { at: 1 } }),
          shape({ query: 'other collection', collection: 'others', equality: ['tenant_id'] }),
        ]).map((line) => line.split(' (')[0]),
      ).toEqual([
        'things: skips state',
        'things: subject alone',
        'things: range before sort',
        'others: other collection',
      ]);
    });

    it('when a partial index filters on a field, then only queries fixing that field may use it', () => {
      expect(
        uncoveredQueries(indexes, [
          shape({ query: 'active', equality: ['tenant_id', 'subject', 'state'] }),
          shape({ query: 'any state', equality: ['tenant_id', 'subject'] }),
        ]).map((line) => line.split(' (')[0]),
      ).toEqual(['things: any state']);
    });
  });
});
