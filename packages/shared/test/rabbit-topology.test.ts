import amqp, { type ChannelModel } from 'amqplib';
import { assertTopology } from '../src/events';
import { TEST_AMQP_URL, deleteAmqpTopology, testTopology } from '../src/testing';

/** What the broker answers when a queue is declared again with other arguments: it closes the channel. */
async function declareAs(
  connection: ChannelModel,
  queue: string,
  args: Record<string, unknown>,
): Promise<string> {
  const ch = await connection.createChannel();
  // The broker's close arrives as an 'error' event too; the rejected declare below carries it.
  ch.on('error', () => undefined);
  try {
    await ch.assertQueue(queue, { durable: true, arguments: args });
    await ch.close();
    return 'declared';
  } catch (err) {
    return String((err as Error).message);
  }
}

describe('the audit topology on the real broker', () => {
  const topology = testTopology();
  let connection: ChannelModel;

  beforeAll(async () => {
    connection = await amqp.connect(TEST_AMQP_URL);
    const ch = await connection.createChannel();
    await assertTopology(ch, topology);
    await ch.close();
  });

  afterAll(async () => {
    await connection.close();
    await deleteAmqpTopology(topology);
  });

  it('when the audit queue is declared again as a classic queue, then the broker refuses with PRECONDITION_FAILED, so it is a quorum queue', async () => {
    const answer = await declareAs(connection, topology.auditQueue, {
      'x-queue-type': 'classic',
      'x-dead-letter-exchange': topology.deadLetterExchange,
    });
    expect(answer).toMatch(/PRECONDITION_FAILED.*x-queue-type/);
  });

  it('when the dead-letter queue is declared again as a classic queue, then the broker refuses with PRECONDITION_FAILED, so it is a quorum queue', async () => {
    const answer = await declareAs(connection, topology.auditDeadLetterQueue, { 'x-queue-type': 'classic' });
    expect(answer).toMatch(/PRECONDITION_FAILED.*x-queue-type/);
  });

  it('when the topology is asserted again (every producer and consumer does at start), then the quorum declarations are accepted as they are', async () => {
    const ch = await connection.createChannel();
    await expect(assertTopology(ch, topology)).resolves.toBeUndefined();
    const { queue } = await ch.checkQueue(topology.auditQueue);
    expect(queue).toBe(topology.auditQueue);
    await ch.close();
  });
});
