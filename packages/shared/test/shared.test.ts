import { createHmac } from 'node:crypto';
import { z } from 'zod';
import {
  canonicalJson,
  describeZodError,
  CachedTokenMinter,
  internalTokens,
  labelText,
  newId,
} from '../src/core';
import { isId } from '../src/core/ids';
import { createLogger } from '../src/observability';
import { snapshotMac } from '../src/mandate';
import {
  InProcessBus,
  RabbitEventSource,
  RabbitPublisher,
  amqpTopology,
  type AuditEvent,
} from '../src/events';
import { decodeCursor, encodeCursor } from '../src/contract';
import { retryDelayMs, INTERNAL_RETRY_POLICY } from '../src/http/http-client';
import { anyEvent, deleteAmqpTopology, TEST_AMQP_URL as AMQP_URL } from '../src/testing';
import amqp from 'amqplib';

const logger = createLogger('test', 'silent');

describe('ids', () => {
  it('when ids are made in sequence, then they sort in creation order and carry the prefix', () => {
    const ids = Array.from({ length: 50 }, () => newId('mdt'));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => isId(id, 'mdt'))).toBe(true);
  });

  it('when many ids are made in one millisecond, then they are distinct, sorted, and carry the time as a ULID', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, () => newId('evt'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const base32 = '0123456789abcdefghjkmnpqrstvwxyz';
    const time = [...ids[0]!.slice(4, 14)].reduce((t, c) => t * 32 + base32.indexOf(c), 0);
    expect(time).toBeGreaterThanOrEqual(before);
    expect(time).toBeLessThanOrEqual(Date.now());
  });
});

describe('describeZodError', () => {
  const schema = z.strictObject({ principal: z.string(), limit: z.number().max(5) });
  it('when a required field is missing, then the message names it', () => {
    const r = schema.safeParse({ limit: 1 });
    expect(r.success || describeZodError(r.error)).toBe('principal is required');
  });
  it('when an unknown field is sent, then the message names it', () => {
    const r = schema.safeParse({ principal: 'a', limit: 1, extra: 1 });
    expect(r.success || describeZodError(r.error)).toBe('extra is not allowed');
  });
});

describe('labelText', () => {
  const name = z.strictObject({
    name: labelText().trim().min(1).max(10),
    tags: z.record(labelText(), labelText()),
  });
  const message = (input: unknown) => {
    const r = name.safeParse(input, { reportInput: true });
    return r.success ? r.data : describeZodError(r.error);
  };

  it.each(['alice\u200b', 'a\u0000', '\u001b[31mred', '\u202eevil', 'a\u2028b', '\ufeffbom', 'tab\there'])(
    'when a label holds %j, then it is refused naming the field',
    (bad) => {
      expect(message({ name: bad, tags: {} })).toBe(
        'name: must contain printable characters only (no control, format or bidi characters)',
      );
    },
  );

  it('when a record key is unprintable, then the message names the record, never the key', () => {
    expect(message({ name: 'ok', tags: { 'k\u202e': 'v' } })).toBe(
      'tags key: must contain printable characters only (no control, format or bidi characters)',
    );
  });

  it('when text is printable but decomposed, then it comes out NFC (names, keys and values)', () => {
    expect(message({ name: ' Cafe\u0301 ', tags: { 'e\u0301': 'n\u0303' } })).toEqual({
      name: 'Caf\u00e9',
      tags: { '\u00e9': '\u00f1' },
    });
    expect(message({ name: '\u6771\u4eac \u0645\u0631\u062d\u0628\u0627 \ud83d\ude00', tags: {} })).toEqual({
      name: '\u6771\u4eac \u0645\u0631\u062d\u0628\u0627 \ud83d\ude00',
      tags: {},
    });
  });
});

describe('cursor', () => {
  it('when a cursor is decoded, then it yields the id it was made from', () => {
    const id = newId('evt');
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });
  it('when a cursor is garbage, then it is a 400', () => {
    expect(() => decodeCursor('nope')).toThrow('cursor is invalid');
  });
});

describe('canonicalJson', () => {
  it('when keys are in any order, then the output is the same RFC 8785 string', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 1, c: 'x' }] })).toBe('{"a":[2,{"c":"x","d":1}],"b":1}');
  });
});

describe('retryDelayMs', () => {
  it('when Retry-After is present, then it is honoured up to the cap', () => {
    expect(retryDelayMs(0, INTERNAL_RETRY_POLICY, '1')).toBe(1000);
    expect(retryDelayMs(0, INTERNAL_RETRY_POLICY, '100')).toBe(INTERNAL_RETRY_POLICY.maxRetryAfterMs);
  });
  it('when backing off, then the delay doubles with at most 50 % jitter', () => {
    expect(retryDelayMs(2, INTERNAL_RETRY_POLICY, undefined, () => 0)).toBe(200);
    expect(retryDelayMs(2, INTERNAL_RETRY_POLICY, undefined, () => 1)).toBe(300);
  });
});

describe('internal token', () => {
  const tokens = internalTokens('x'.repeat(32));
  it('when minted and verified with the same secret, then the caller context survives', async () => {
    const ctx = {
      tenantId: 'tnt_1',
      actor: { type: 'api_key' as const, key_id: 'key_1' },
      permissions: ['verify'],
      requestId: 'r1',
    };
    await expect(tokens.verify(await tokens.mint(ctx, 'mandates'), 'mandates')).resolves.toEqual(ctx);
  });
  it('when signed with another secret, then it is refused', async () => {
    const other = internalTokens('y'.repeat(32));
    const token = await other.mint(
      {
        tenantId: null,
        actor: { type: 'system' },
        permissions: [],
        requestId: 'r',
      },
      'mandates',
    );
    await expect(tokens.verify(token, 'mandates')).rejects.toThrow();
  });
  it('when a token minted for verify is shown to mandates, then it is refused, also once verify has accepted it', async () => {
    const ctx = { tenantId: 'tnt_1', actor: { type: 'system' as const }, permissions: [], requestId: 'r' };
    const token = await tokens.mint(ctx, 'verify');
    await expect(tokens.verify(token, 'mandates')).rejects.toThrow('unexpected audience');
    await expect(tokens.verify(token, 'verify')).resolves.toEqual(ctx);
    // The verified-token cache must not let it through either.
    await expect(tokens.verify(token, 'mandates')).rejects.toThrow('unexpected audience');
  });
  it('when the minter is asked for two audiences, then each gets its own token, reused per audience', async () => {
    const minter = new CachedTokenMinter(tokens);
    const ctx = { tenantId: 'tnt_1', actor: { type: 'system' as const }, permissions: [] };
    const forVerify = await minter.mint(ctx, 'verify');
    const forMandates = await minter.mint(ctx, 'mandates');
    expect(forMandates).not.toBe(forVerify);
    expect(await minter.mint(ctx, 'verify')).toBe(forVerify);
    await expect(tokens.verify(forMandates, 'mandates')).resolves.toMatchObject({ tenantId: 'tnt_1' });
    await expect(tokens.verify(forVerify, 'mandates')).rejects.toThrow('unexpected audience');
  });
});

describe('snapshot MAC', () => {
  const mac = snapshotMac('x'.repeat(32));
  const json = '{"id":"mdt_1","state":"REVOKED"}';
  it('when the JSON or the key differs, then the MAC does not check; the same JSON and key does', () => {
    const signed = mac.sign(json);
    expect(mac.check(json, signed)).toBe(true);
    expect(mac.check(json.replace('REVOKED', 'ACTIVE'), signed)).toBe(false);
    expect(snapshotMac('y'.repeat(32)).check(json, signed)).toBe(false);
    expect(mac.check(json, null)).toBe(false);
    expect(mac.check(json, signed.slice(0, -2))).toBe(false);
  });
  it('when derived from the internal-token secret, then the MAC is not an HMAC keyed with the secret itself', () => {
    const secret = 'x'.repeat(32);
    const direct = createHmac('sha256', secret).update(json).digest('base64url');
    expect(mac.sign(json)).not.toBe(direct);
  });
});

const sampleEvent = (): AuditEvent =>
  anyEvent({
    type: 'MANDATE_CREATED',
    tenantId: 'tnt_x',
    resource: { type: 'mandate', id: 'mdt_x' },
    data: {},
  });

describe('InProcessBus', () => {
  it('when events are published before a subscriber starts, then the subscriber still gets them', async () => {
    const bus = new InProcessBus();
    const got: string[] = [];
    const e = sampleEvent();
    await bus.publish([e]);
    await bus.start(async (ev) => void got.push(ev.id));
    await bus.drain();
    expect(got).toEqual([e.id]);
  });

  it('when a subscriber to some types is added, then it gets only those types, only from then on, and the consumer still gets its backlog', async () => {
    const bus = new InProcessBus();
    const early = { ...sampleEvent(), type: 'API_KEY_REVOKED' as const };
    await bus.publish([early]);
    const subscribed: string[] = [];
    await bus.subscribe(['API_KEY_REVOKED'], async (ev) => void subscribed.push(ev.id));
    const revoked = { ...sampleEvent(), type: 'API_KEY_REVOKED' as const };
    const other = sampleEvent();
    await bus.publish([revoked, other]);
    const consumed: string[] = [];
    await bus.start(async (ev) => void consumed.push(ev.id));
    await bus.drain();
    expect(subscribed).toEqual([revoked.id]);
    expect(consumed).toEqual([early.id, revoked.id, other.id]);
  });
});

describe('RabbitMQ publisher and source (real broker)', () => {
  const topology = amqpTopology(`test-${newId('req')}`);
  afterAll(() => deleteAmqpTopology(topology, AMQP_URL));

  it('when a valid and an invalid message are published, then the handler sees the valid one and the invalid one is dead-lettered', async () => {
    const publisher = new RabbitPublisher(AMQP_URL, logger, topology);
    const event = sampleEvent();
    await publisher.publish([event]);
    const c = await amqp.connect(AMQP_URL);
    const ch = await c.createConfirmChannel();
    ch.publish(topology.exchange, 'audit.BOGUS', Buffer.from('{"not":"an event"}'), { persistent: true });
    await ch.waitForConfirms();

    const source = new RabbitEventSource({ url: AMQP_URL, logger, topology });
    const got: AuditEvent[] = [];
    await source.start(async (ev) => void got.push(ev));
    const deadline = Date.now() + 20_000;
    let dead: false | amqp.GetMessage = false;
    while (Date.now() < deadline && (got.length === 0 || !dead)) {
      await new Promise((r) => setTimeout(r, 50));
      if (!dead) dead = await ch.get(topology.auditDeadLetterQueue, { noAck: true });
    }
    expect(got.map((e) => e.id)).toEqual([event.id]);
    expect(dead && dead.content.toString()).toBe('{"not":"an event"}');
    await source.stop();
    await publisher.close();
    await c.close();
  });
});
