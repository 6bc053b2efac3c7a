import amqp, { type ChannelModel } from 'amqplib';
import { amqpNodes } from '../../core/amqp-url';
import { isBrokerRefusal } from '../../core/infrastructure-errors';

/**
 * Connects to AMQP_URL's nodes, one at a time, each connection to the next node after the one
 * last connected to (or tried): a node that went away is tried last, and a node that does not
 * answer is skipped at once for the next. Publisher confirms and consumer acknowledgements are
 * per connection, so what was not confirmed or acknowledged on a lost node is sent or delivered
 * again through the next one (docs/DEPLOYMENT.md, "Delivery guarantees").
 */
export class AmqpNodes {
  readonly nodes: readonly string[];
  private next = 0;

  constructor(value: string) {
    this.nodes = amqpNodes(value);
  }

  /** The connection and the node it reached; throws the last node's error when none answers. */
  async connect(): Promise<{ connection: ChannelModel; node: string }> {
    let lastError: unknown;
    for (let tried = 0; tried < this.nodes.length; tried++) {
      const node = this.nodes[this.next]!;
      this.next = (this.next + 1) % this.nodes.length;
      try {
        return { connection: await amqp.connect(node), node };
      } catch (err) {
        lastError = err;
        // A refused login is the same on every node: trying the others would only hide it.
        if (isBrokerRefusal(err)) break;
      }
    }
    throw lastError;
  }
}
