/** The providers a worker offers, built from its configuration; a spec names the one it needs. */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../src/config';
import { RUNTIME_KINDS, SANDBOX_PROVIDERS, type SandboxProviderName } from '../../src/schemas/sandboxes';
import type { Unrunnable } from '../../src/store/worker-hosts-store';
import { DockerProvider, dockerFromHost } from './docker-provider';
import { sandboxCgroups } from './process-cgroups';
import { sandboxDisks } from './process-disks';
import { ProcessIsolation } from './process-isolation';
import { ProcessProvider } from './process-provider';
import { ProviderConfigError, type SandboxProvider } from './provider';
import { SandboxTree } from './sandbox-tree';
import { RemoteProvider } from './remote-provider';

export type ProviderRegistry = (name: SandboxProviderName) => SandboxProvider;

/** dist/src/runtime/main.js: beside this file's compiled form, or under dist/ when this runs from source (tests). */
const compiledBeside = path.resolve(__dirname, '..', '..', 'src', 'runtime', 'main.js');
export const BUILT_IN_RUNTIME_ENTRY = fs.existsSync(compiledBeside)
  ? compiledBeside
  : path.resolve(__dirname, '..', '..', 'dist', 'src', 'runtime', 'main.js');

/** dist/runtime-bundle.js: the runtime as one file, for sandboxes that cannot read the checkout. */
export const BUILT_IN_RUNTIME_BUNDLE = path.resolve(
  path.dirname(BUILT_IN_RUNTIME_ENTRY),
  '..',
  '..',
  'runtime-bundle.js',
);

/** The sandboxes' directories of this configuration, each made with its mode by whichever step needs it first. */
export const sandboxTree = (config: Pick<Config, 'dataDir' | 'sandboxes'>) =>
  new SandboxTree({
    sandboxesDir: config.sandboxes.dir,
    isolated: config.sandboxes.processIsolation === 'user',
    dataDir: config.dataDir,
  });

export function createProviders(config: Pick<Config, 'dataDir' | 'sandboxes'>): ProviderRegistry {
  const s = config.sandboxes;
  const tree = sandboxTree(config);
  const isolation =
    s.processIsolation === 'user'
      ? new ProcessIsolation({
          dataDir: config.dataDir,
          tree,
          uidRange: s.uidRange,
          runtimeBundle: BUILT_IN_RUNTIME_BUNDLE,
          controlPlaneUrl: s.controlPlaneUrl,
          localAllow: s.localAllow,
          reservedPorts: s.reservedPorts,
        })
      : undefined;
  const { cgroups } = sandboxCgroups(s.cgroups, s.cgroupParent);
  const { disks } = sandboxDisks(s.disks, tree);
  const processProvider = new ProcessProvider({
    tree,
    host: s.processHost,
    runtimeEntry: BUILT_IN_RUNTIME_ENTRY,
    isolation,
    agentServerDir: s.agentServerDir,
    cgroups,
    disks,
    defaultLimits: s.defaultLimits,
  });
  const docker = new DockerProvider({
    docker: dockerFromHost(config.sandboxes.dockerHost),
    publishHost: config.sandboxes.dockerPublishHost,
    network: config.sandboxes.dockerNetwork,
    peers: config.sandboxes.dockerPeers,
    defaultLimits: s.defaultLimits,
    disks,
  });
  const remoteConfig = config.sandboxes.remote;
  const remote = remoteConfig && new RemoteProvider(remoteConfig);
  return (name) => {
    switch (name) {
      case 'process':
        return processProvider;
      case 'docker':
        return docker;
      case 'remote':
        if (!remote)
          throw new ProviderConfigError(
            'the remote provider is not configured: set REMOTE_RUNTIME_API_URL and REMOTE_RUNTIME_API_KEY',
          );
        return remote;
    }
  };
}

/** The provider and runtime pairs these providers cannot start at all, as configured, each with why. */
export function unrunnableWith(providers: ProviderRegistry): Unrunnable[] {
  return SANDBOX_PROVIDERS.flatMap((provider) => {
    let p: SandboxProvider;
    try {
      p = providers(provider);
    } catch (e) {
      if (!(e instanceof ProviderConfigError)) throw e;
      return RUNTIME_KINDS.map((runtime) => ({ provider, runtime, reason: e.message }));
    }
    return RUNTIME_KINDS.flatMap((runtime) => {
      const reason = p.unrunnable(runtime);
      return reason === null ? [] : [{ provider, runtime, reason }];
    });
  });
}
