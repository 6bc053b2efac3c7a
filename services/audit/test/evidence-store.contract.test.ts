import { newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { describeStoreContract } from '@mandate/shared/testing';
import type { EventStore } from '../src/store/event-store';
import { eventStoreAdapters } from './adapters';
import { buildAuditEvent } from './factories';
const ids = (events: AuditEvent[]) => events.map((e) => e.id);

/** EventStore.listByResource, the evidence export's read: every event about one resource, oldest first. */
describeStoreContract<EventStore>('EventStore.listByResource', eventStoreAdapters(), (getStore) => {
  it('when a resource has events of several types, inserted out of order, then all come back oldest first by id', async () => {
    const tenant = newId('tnt');
    const mandate = newId('mdt');
    const about = (type: AuditEvent['type']) =>
      buildAuditEvent(tenant, { type, resource: { type: 'mandate', id: mandate } });
    const events = [
      about('MANDATE_CREATED'),
      about('VERIFICATION_PERFORMED'),
      about('MANDATE_SUSPENDED'),
      about('VERIFICATION_PERFORMED'),
      about('EVIDENCE_EXPORTED'),
    ];
    await getStore().insertMany([events[2]!, events[4]!, events[0]!, events[3]!, events[1]!]);
    const got = await getStore().listByResource(tenant, mandate, 100);
    expect(ids(got)).toEqual(ids(events));
    expect(got[0]).toEqual({ ...events[0], seq: expect.any(Number) });
  });

  it("when other resources, other tenants and platform events exist, then only this tenant's events about this resource are listed", async () => {
    const tenant = newId('tnt');
    const mandate = newId('mdt');
    const mine = buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandate } });
    await getStore().insertMany([
      mine,
      buildAuditEvent(tenant),
      buildAuditEvent(tenant, { resource: null }),
      buildAuditEvent(newId('tnt'), { resource: { type: 'mandate', id: mandate } }),
      buildAuditEvent(null, { resource: { type: 'mandate', id: mandate } }),
    ]);
    expect(ids(await getStore().listByResource(tenant, mandate, 100))).toEqual([mine.id]);
    expect(await getStore().listByResource(newId('tnt'), newId('mdt'), 100)).toEqual([]);
  });

  it('when there are more events than the limit, then limit+1 of the oldest come back, so the caller can tell', async () => {
    const tenant = newId('tnt');
    const mandate = newId('mdt');
    const events = Array.from({ length: 6 }, () =>
      buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandate } }),
    );
    await getStore().insertMany(events);
    expect(ids(await getStore().listByResource(tenant, mandate, 3))).toEqual(ids(events.slice(0, 4)));
  });
});

/** EventStore.readByResource, the streaming export's cursor: the same events as listByResource, oldest first. */
describeStoreContract<EventStore>('EventStore.readByResource', eventStoreAdapters(), (getStore) => {
  const readAll = async (tenant: string, resource: string) => {
    const out: AuditEvent[] = [];
    for await (const event of getStore().readByResource(tenant, resource)) out.push(event);
    return out;
  };

  it("when a resource has more events than one cursor batch, inserted out of order, then every one of this tenant's comes back once, oldest first", async () => {
    const tenant = newId('tnt');
    const mandate = newId('mdt');
    const events = Array.from({ length: 1_203 }, () =>
      buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandate } }),
    );
    await getStore().insertMany([...events].reverse());
    await getStore().insertMany([
      buildAuditEvent(tenant),
      buildAuditEvent(newId('tnt'), { resource: { type: 'mandate', id: mandate } }),
      buildAuditEvent(null, { resource: { type: 'mandate', id: mandate } }),
    ]);
    const got = await readAll(tenant, mandate);
    expect(ids(got)).toEqual(ids(events));
    expect(got[7]).toEqual({ ...events[7], seq: expect.any(Number) });
    expect(await readAll(newId('tnt'), mandate)).toEqual([]);
  });
});
