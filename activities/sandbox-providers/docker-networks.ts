/**
 * The networks of docker sandboxes: a bridge network of its own per sandbox (made, deduplicated,
 * removed), and the peers (the api, the worker) attached to it when the service runs on a shared network.
 */
import type Docker from 'dockerode';
import { engineMessage, notFound, statusOf } from './docker-engine-errors';
import { SANDBOX_LABEL as LABEL, sandboxNames } from './docker-sandbox-names';
import { ProviderConfigError } from './provider';

/** Compose's labels of the project (on its networks and containers) and of a container's service. */
const COMPOSE_PROJECT = 'com.docker.compose.project';
const COMPOSE_SERVICE = 'com.docker.compose.service';

/** A failed network creation; the engine's address pools running out is the operator's to fix. */
function networkError(name: string, e: unknown): Error {
  const message = engineMessage(e);
  if (/address pool|non-overlapping/i.test(message)) {
    return new ProviderConfigError(
      `cannot create the sandbox network ${name}: the Docker engine has no address range left (${message}); give dockerd larger default-address-pools, or delete sandboxes`,
    );
  }
  return e as Error;
}

export class SandboxNetworks {
  constructor(
    private readonly docker: Docker,
    /** The shared network (DOCKER_NETWORK) and the peers that join each sandbox's own instead. */
    private readonly opts: { network?: string; peers?: string[] },
  ) {}

  /**
   * The sandbox's own bridge network, made when missing. A name is no key for the engine (two concurrent
   * creations can both succeed), so every attempt settles on the oldest network of that name and label
   * and removes the others.
   */
  async ensureNetwork(sandboxId: string): Promise<string> {
    const { network: name } = sandboxNames(sandboxId);
    const docker = this.docker;
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Labels: { [LABEL]: sandboxId },
      });
    } catch (e) {
      if (statusOf(e) !== 409) throw networkError(name, e); // 409: an earlier attempt made it
    }
    const [kept, ...duplicates] = await this.networksOf(sandboxId);
    if (!kept) throw new Error(`the network ${name} is gone right after its creation`);
    for (const d of duplicates) await this.removeNetwork(d.Id).catch(() => undefined); // the other attempt settles on the same one
    return kept.Id;
  }

  /** Removes a network, after taking off what is still attached to it (peers). A missing one is not an error. */
  async removeNetwork(id: string): Promise<void> {
    const network = this.docker.getNetwork(id);
    const info = await network.inspect().catch((e: unknown) => notFound<Docker.NetworkInspectInfo>(e));
    if (!info) return;
    for (const container of Object.keys(info.Containers ?? {}))
      await network.disconnect({ Container: container, Force: true }).catch(() => undefined);
    await network.remove().catch((e: unknown) => notFound(e));
  }

  /** The containers `peers` names, each with the name the sandbox reaches it by. */
  private async peerContainers(): Promise<{ id: string; alias: string }[]> {
    const docker = this.docker;
    const shared = await docker
      .getNetwork(this.opts.network!)
      .inspect()
      .catch((e: unknown) => notFound<Docker.NetworkInspectInfo>(e));
    if (!shared)
      throw new ProviderConfigError(`the Docker network ${this.opts.network} (DOCKER_NETWORK) does not exist`);
    const project = shared.Labels?.[COMPOSE_PROJECT];
    const found: { id: string; alias: string }[] = [];
    for (const alias of this.opts.peers ?? []) {
      const services = project
        ? await docker.listContainers({
            filters: { label: [`${COMPOSE_PROJECT}=${project}`, `${COMPOSE_SERVICE}=${alias}`] },
          })
        : [];
      if (services.length > 0) {
        found.push(...services.map((c) => ({ id: c.Id, alias })));
        continue;
      }
      const container = await docker
        .getContainer(alias)
        .inspect()
        .catch((e: unknown) => notFound<Docker.ContainerInspectInfo>(e));
      if (!container)
        throw new ProviderConfigError(
          `the sandbox peer ${alias} is neither a running service of the compose project ${project ?? '(none)'} nor a container`,
        );
      found.push({ id: container.Id, alias });
    }
    return found;
  }

  /** Attaches the peers to the sandbox's network, those not on it yet (a peer recreated since, say). */
  async connectPeers(sandboxId: string): Promise<void> {
    const [own] = await this.networksOf(sandboxId);
    if (!own) return; // a container made before peers were configured: it is on the shared network
    const network = this.docker.getNetwork(own.Id);
    const attached = new Set(Object.keys((await network.inspect()).Containers ?? {}));
    for (const peer of await this.peerContainers()) {
      if (attached.has(peer.id)) continue;
      await network.connect({ Container: peer.id, EndpointConfig: { Aliases: [peer.alias] } }).catch((e: unknown) => {
        if (!/already exists/i.test(engineMessage(e))) throw e; // a concurrent attempt attached it
      });
    }
  }

  /** The sandbox's networks (one, but for concurrent creations), oldest first. */
  async networksOf(sandboxId: string): Promise<Docker.NetworkInspectInfo[]> {
    const { network: name } = sandboxNames(sandboxId);
    const found = await this.docker.listNetworks({ filters: { label: [`${LABEL}=${sandboxId}`], name: [name] } });
    return found
      .filter((n) => n.Name === name)
      .sort((a, b) => a.Created.localeCompare(b.Created) || a.Id.localeCompare(b.Id));
  }
}
