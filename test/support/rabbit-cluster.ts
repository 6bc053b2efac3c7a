import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually';

const run = promisify(execFile);

const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server';
const RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl';

/**
 * The private nodes: their names, AMQP ports and Erlang distribution ports. Never the shared
 * broker's (rabbit@localhost on 5672, distribution 25672), which no test restarts.
 */
const NODES = [
  { name: 'h44r-a@localhost', amqpPort: 5691, distPort: 25691 },
  { name: 'h44r-b@localhost', amqpPort: 5692, distPort: 25692 },
  { name: 'h44r-c@localhost', amqpPort: 5693, distPort: 25693 },
] as const;

export type RabbitNodeName = (typeof NODES)[number]['name'];

/** A quorum queue as the cluster lists it: its leader, its members and which of them are online. */
export interface QuorumQueueInfo {
  name: string;
  type: string;
  leader: string;
  members: string[];
  online: string[];
  messages_ready: number;
  messages_unacknowledged: number;
  consumers: number;
}

/** A private three-node RabbitMQ cluster on its own ports, files in a temporary directory. */
export interface RabbitCluster {
  nodes: readonly { name: RabbitNodeName; amqpPort: number }[];
  /** AMQP_URL naming every node, starting with `first` (the default: the first node). */
  amqpUrl(first?: RabbitNodeName): string;
  /** A queue of the default vhost as `rabbitmqctl list_queues` sees it (asked of a running node). */
  queue(name: string): Promise<QuorumQueueInfo>;
  /** Stops the node with `rabbitmqctl shutdown`: it closes its connections and leaves its queues' Raft groups. */
  shutdown(node: RabbitNodeName): Promise<void>;
  /** SIGKILLs the node (no shutdown): its connections drop and the others find it gone. */
  kill(node: RabbitNodeName): Promise<void>;
  /** Starts a stopped node again on its own files; resolves once it runs in the cluster. */
  start(node: RabbitNodeName): Promise<void>;
  /** Kills every node and removes their files. */
  stop(): Promise<void>;
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * Boots the three nodes in parallel (rabbitmq-server, the shared broker's own binary: no
 * management plugin, each node with its own data, logs and config), then joins b and c to a with
 * `rabbitmqctl stop_app / join_cluster / start_app`. About 25 s on an idle 2-core machine.
 */
export async function startRabbitCluster(): Promise<RabbitCluster> {
  const busy = (await Promise.all(NODES.flatMap((n) => [n.amqpPort, n.distPort]).map(portFree)))
    .map((free, i) => (free ? undefined : NODES.flatMap((n) => [n.amqpPort, n.distPort])[i]))
    .filter((p) => p !== undefined);
  if (busy.length > 0)
    throw new Error(
      `ports ${busy.join(', ')} are taken: a RabbitMQ cluster test left running? (epmd -names lists h44r-* nodes)`,
    );
  const dir = await mkdtemp(path.join(tmpdir(), 'rabbit-cluster-'));
  // One cookie for the nodes and for rabbitmqctl: Erlang reads it from $HOME, and refuses one others can read.
  const home = path.join(dir, 'home');
  await mkdir(home);
  await writeFile(path.join(home, '.erlang.cookie'), `h44r${process.pid}${Date.now()}`);
  await chmod(path.join(home, '.erlang.cookie'), 0o400);
  const plugins = path.join(dir, 'enabled_plugins');
  await writeFile(plugins, '');
  // An empty rabbitmq-env.conf: the system's names the shared broker's node.
  const envConf = path.join(dir, 'rabbitmq-env.conf');
  await writeFile(envConf, '');

  const children = new Map<RabbitNodeName, ChildProcess>();
  const envOf = async (node: (typeof NODES)[number]) => {
    const base = path.join(dir, node.name.split('@')[0]!);
    await mkdir(path.join(base, 'log'), { recursive: true });
    const config = path.join(base, 'rabbitmq.conf');
    await writeFile(config, `listeners.tcp.default = 127.0.0.1:${node.amqpPort}\n`);
    return {
      ...process.env,
      HOME: home,
      RABBITMQ_NODENAME: node.name,
      RABBITMQ_NODE_PORT: String(node.amqpPort),
      RABBITMQ_DIST_PORT: String(node.distPort),
      RABBITMQ_MNESIA_BASE: path.join(base, 'mnesia'),
      RABBITMQ_LOG_BASE: path.join(base, 'log'),
      RABBITMQ_ENABLED_PLUGINS_FILE: plugins,
      RABBITMQ_CONFIG_FILE: config,
      RABBITMQ_CONF_ENV_FILE: envConf,
      // What the system's rabbitmq-env.conf sets for the shared broker: distribution on loopback only.
      ERL_EPMD_ADDRESS: '127.0.0.1',
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    };
  };
  const ctl = async (node: RabbitNodeName, ...args: string[]) =>
    (
      await run(RABBITMQCTL, ['-n', node, ...args], {
        env: { ...process.env, HOME: home },
        timeout: 60_000,
      })
    ).stdout;
  const logTail = async (node: RabbitNodeName) =>
    (await readFile(path.join(dir, node.split('@')[0]!, 'log', `${node}.log`), 'utf8').catch(() => ''))
      .split('\n')
      .slice(-15)
      .join('\n');

  /** Spawns the node in a process group of its own: the script forks the VM, and a kill must reach both. */
  const boot = async (name: RabbitNodeName) => {
    const node = NODES.find((n) => n.name === name)!;
    const child = spawn(RABBITMQ_SERVER, [], { env: await envOf(node), stdio: 'ignore', detached: true });
    children.set(name, child);
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`${name} exited with ${code} at start`))),
    );
    exited.catch(() => undefined);
    try {
      // await_startup fails at once while the node is not yet in epmd: asked again until it answers.
      await Promise.race([
        eventually(() => ctl(name, 'await_startup', '--timeout', '90'), 90_000, `${name} to start`, 500),
        exited,
      ]);
    } catch (err) {
      throw new Error(`${name} did not start: ${String(err)}\n${await logTail(name)}`);
    }
  };
  const killGroup = async (name: RabbitNodeName) => {
    const child = children.get(name);
    if (!child?.pid) return;
    children.delete(name);
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    // The VM is gone once epmd no longer lists the node.
    await eventually(
      async () =>
        (await run('epmd', ['-names'])).stdout.includes(`name ${name.split('@')[0]} `) ? undefined : true,
      15_000,
      `${name} to leave epmd`,
    );
  };
  const running = (): RabbitNodeName => {
    const name = NODES.find((n) => children.has(n.name))?.name;
    if (!name) throw new Error('no node of the cluster runs');
    return name;
  };

  const cluster: RabbitCluster = {
    nodes: NODES,
    amqpUrl(first = NODES[0].name) {
      const i = NODES.findIndex((n) => n.name === first);
      const ordered = [...NODES.slice(i), ...NODES.slice(0, i)];
      return `amqp://guest:guest@${ordered.map((n) => `127.0.0.1:${n.amqpPort}`).join(',')}`;
    },
    async queue(name) {
      const rows = JSON.parse(
        await ctl(
          running(),
          'list_queues',
          'name',
          'type',
          'leader',
          'members',
          'online',
          'messages_ready',
          'messages_unacknowledged',
          'consumers',
          '--formatter',
          'json',
          '-q',
        ),
      ) as QuorumQueueInfo[];
      const row = rows.find((r) => r.name === name);
      if (!row) throw new Error(`no queue ${name} in the cluster`);
      return row;
    },
    async shutdown(name) {
      await ctl(name, 'shutdown');
      await killGroup(name);
    },
    kill: killGroup,
    async start(name) {
      await boot(name);
    },
    async stop() {
      await Promise.all(NODES.map((n) => killGroup(n.name).catch(() => undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };

  try {
    await Promise.all(NODES.map((n) => boot(n.name)));
    const [a, ...others] = NODES.map((n) => n.name);
    for (const other of others) {
      await ctl(other, 'stop_app');
      await ctl(other, 'join_cluster', a!);
      await ctl(other, 'start_app');
    }
    const status = await ctl(a!, 'cluster_status', '--formatter', 'json', '-q');
    const runningNodes = (JSON.parse(status) as { running_nodes: string[] }).running_nodes;
    if (runningNodes.length !== NODES.length) throw new Error(`the cluster runs ${runningNodes.join(', ')}`);
    return cluster;
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}
