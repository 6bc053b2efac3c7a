import type { Channel, ChannelModel } from 'amqplib';
import { isBrokerRefusal } from '../../core/infrastructure-errors';
import { AmqpNodes } from './amqp-nodes';
import type { Logger } from '../../observability/logger';
import { amqpTopology, type AmqpTopology } from './topology';

/** The longest pause between two reconnect attempts (docs/DECISIONS.md#recovery). */
const RECONNECT_MAX_DELAY_MS = 2_000;

/** How a consumer names itself in its log lines. */
export interface ConsumerLogNames {
  /** Starts the lines about reaching the broker: 'audit consumer cannot reach RabbitMQ yet; retrying'. */
  who: string;
  /** Names the connection and channel in their error lines: 'amqp consumer channel error'. */
  role: string;
  /** Fields every one of those lines carries (a subscriber's name). */
  context?: Record<string, unknown>;
}

/**
 * What the audit queue's consumer and the per-process subscriber share: the connection is made at
 * start or, when the broker is unreachable, retried in the background with backoff (a service
 * starts while the broker is away; readiness reports `connected`), and a connection or channel
 * that goes away later takes the same reconnect path. Subclasses say how they consume (`connect`)
 * and how they stop.
 */
export abstract class ReconnectingConsumer<Handler> {
  readonly kind = 'rabbitmq' as const;
  protected connection?: ChannelModel;
  protected channel?: Channel;
  protected stopped = false;
  protected readonly topology: AmqpTopology;
  private nodes?: AmqpNodes;

  protected constructor(
    private readonly logger: Logger,
    topology: AmqpTopology | undefined,
    private readonly names: ConsumerLogNames,
  ) {
    this.topology = topology ?? amqpTopology();
  }

  /** True while a channel is consuming; readiness checks report it. */
  get connected(): boolean {
    return this.channel !== undefined;
  }

  /** AMQP_URL's nodes, kept across reconnects so each goes to the node after the last one. */
  protected nodesOf(url: string): AmqpNodes {
    this.nodes ??= new AmqpNodes(url);
    return this.nodes;
  }

  /** Connects and starts consuming into `handler`; throws when the broker or the setup fails. */
  protected abstract connect(handler: Handler): Promise<void>;

  /**
   * Connects now; if the broker is unreachable, keeps retrying in the background instead of
   * failing the service's start.
   */
  protected async connectOrRetry(handler: Handler): Promise<void> {
    this.stopped = false;
    try {
      await this.connect(handler);
    } catch (err) {
      // A refused login or vhost is a configuration to fix, not an outage to wait out: the start
      // fails, with one line naming AMQP_URL (docs/TROUBLESHOOTING.md), instead of retrying forever.
      if (isBrokerRefusal(err)) throw err;
      this.logger.warn(
        { err, ...this.names.context },
        `${this.names.who} cannot reach RabbitMQ yet; retrying`,
      );
      void this.reconnect(handler);
    }
  }

  /**
   * Logs the errors of a consuming connection and its channel, and reconnects when either closes
   * (unless stopped): a channel can die alone (a protocol error, say), and closing its connection
   * funnels that into the one reconnect path.
   */
  protected watch(connection: ChannelModel, channel: Channel, handler: Handler): void {
    const { role, context } = this.names;
    connection.on('error', (err) => this.logger.warn({ err, ...context }, `amqp ${role} connection error`));
    connection.on('close', () => {
      this.channel = undefined;
      if (!this.stopped) void this.reconnect(handler);
    });
    channel.on('error', (err) => this.logger.warn({ err, ...context }, `amqp ${role} channel error`));
    channel.on('close', () => {
      this.channel = undefined;
      if (!this.stopped) void connection.close().catch(() => undefined);
    });
  }

  private async reconnect(handler: Handler): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      // At most 2 s apart: a consumer is back within 2 s of its broker, well inside the 10 s in
      // which a service is whole again after a fault (docs/DECISIONS.md#recovery).
      await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, RECONNECT_MAX_DELAY_MS)));
      if (this.stopped) return;
      try {
        await this.connect(handler);
        return;
      } catch (err) {
        this.logger.warn({ err, attempt, ...this.names.context }, `${this.names.who} reconnect failed`);
      }
    }
  }
}
