import amqp from 'amqplib';
import { amqpTopology, type AmqpTopology } from '../events/bus/topology';
import { newId } from '../core/ids';

export const TEST_AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A topology of its own for one test file, so parallel files never share queues on the real broker. */
export function testTopology(): AmqpTopology & { namespace: string } {
  const namespace = `test-${newId('req')}`;
  return { ...amqpTopology(namespace), namespace };
}

/** Deletes what a test declared on the shared broker. */
export async function deleteAmqpTopology(topology: AmqpTopology, url = TEST_AMQP_URL): Promise<void> {
  const connection = await amqp.connect(url);
  try {
    const ch = await connection.createChannel();
    await ch.deleteQueue(topology.auditQueue);
    await ch.deleteQueue(topology.auditDeadLetterQueue);
    await ch.deleteQueue(topology.webhookQueue);
    await ch.deleteExchange(topology.exchange);
    await ch.deleteExchange(topology.deadLetterExchange);
  } finally {
    await connection.close();
  }
}

/** How many messages wait in the topology's audit queue right now, read on a connection of its own. */
export async function auditQueueDepth(topology: AmqpTopology, url = TEST_AMQP_URL): Promise<number> {
  const connection = await amqp.connect(url);
  try {
    const ch = await connection.createChannel();
    return (await ch.checkQueue(topology.auditQueue)).messageCount;
  } finally {
    await connection.close();
  }
}
