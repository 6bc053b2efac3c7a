import { parseEventMessage } from '../src/events';
import { anyEvent } from '../src/testing';

const event = () =>
  anyEvent({
    type: 'MANDATE_CREATED',
    tenantId: 'tnt_01jtesttenant000000000000',
    resource: { type: 'mandate', id: 'mdt_01jtestmandate00000000000' },
    data: { note: 'test' },
  });

const message = (elements: unknown[]) => Buffer.from(JSON.stringify(elements));

describe('parseEventMessage: an event’s data', () => {
  it('when data is a JSON object, then the event is taken with its data field for field', () => {
    const data = { input: { amount: 12, currency: 'EUR', tags: ['a', 'b'] }, decision: 'ALLOW', note: null };
    const parsed = parseEventMessage(message([{ ...event(), data }]));
    expect(parsed?.invalid).toEqual([]);
    expect(parsed?.events.map((e) => e.data)).toEqual([data]);
  });

  it.each([
    ['an array', []],
    ['null', null],
    ['a string', 'x'],
    ['a number', 1],
  ])('when data is %s, then that element alone is invalid', (_, data) => {
    const valid = event();
    const parsed = parseEventMessage(message([valid, { ...event(), data }]));
    expect(parsed?.events.map((e) => e.id)).toEqual([valid.id]);
    expect(parsed?.invalid).toHaveLength(1);
  });

  it('when data has a member named __proto__, then it is dropped and the data keeps a plain prototype', () => {
    const text = JSON.stringify([event()]).replace('"data":{', '"data":{"__proto__":{"polluted":true},');
    const parsed = parseEventMessage(Buffer.from(text));
    const data = parsed!.events[0]!.data;
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(Object.keys(data)).toEqual(['note']);
    expect((data as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
