import type { AuditEvent } from '@mandate/shared/events';
import { cloneEvent } from '../src/store/memory-event-store';

const base = (data: Record<string, unknown>): AuditEvent => ({
  id: 'evt_01jz8y7x6w5v4t3s2r1q0p9n8m',
  tenant_id: 'tnt_01jz8y7x6w5v4t3s2r1q0p9n8m',
  type: 'VERIFICATION_PERFORMED',
  occurred_at: '2026-06-01T12:00:00.000Z',
  actor: { type: 'api_key', key_id: 'key_01jz8y7x6w5v4t3s2r1q0p9n8m' },
  request_id: 'req_1',
  resource: { type: 'mandate', id: 'mdt_01jz8y7x6w5v4t3s2r1q0p9n8m' },
  data,
});

describe('cloneEvent (the memory store copy) answers what structuredClone answers', () => {
  it.each([
    ['plain JSON data', base({ input: { a: 1, b: [1, 'x', { c: null }] }, n: -0, u: undefined, big: 10n })],
    ['a Date inside', base({ at: new Date(0) })],
    ['a Map inside', base({ m: new Map([[1, 2]]) })],
    ['a null-prototype object', base({ o: Object.assign(Object.create(null), { a: 1 }) })],
    [
      'a class instance',
      base({
        o: new (class K {
          a = 1;
        })(),
      }),
    ],
    // eslint-disable-next-line no-sparse-arrays -- the hole is the point
    ['a sparse array', base({ s: [1, , 3] })],
    ['an own __proto__ key', base(JSON.parse('{"__proto__":{"x":1},"y":2}'))],
  ])('%s', (_name, event) => {
    const copy = cloneEvent(event);
    expect(copy).toStrictEqual(structuredClone(event));
    expect(copy).not.toBe(event);
    expect(copy.data).not.toBe(event.data);
  });

  it('keeps shared and cyclic references as structuredClone does', () => {
    const shared = { a: 1 };
    const cyclic: Record<string, unknown> = { b: 2 };
    cyclic.self = cyclic;
    const copy = cloneEvent(base({ x: shared, y: shared, cyclic }));
    expect(copy.data.x).toBe(copy.data.y);
    expect(copy.data.x).not.toBe(shared);
    const c = copy.data.cyclic as Record<string, unknown>;
    expect(c.self).toBe(c);
  });

  it('is independent of the original both ways', () => {
    const event = base({ input: { amount: 1 } });
    const copy = cloneEvent(event);
    (event.data.input as { amount: number }).amount = 2;
    expect((copy.data.input as { amount: number }).amount).toBe(1);
  });

  it('throws for what structuredClone cannot copy', () => {
    expect(() => cloneEvent(base({ f: () => 1 }))).toThrow();
  });
});
