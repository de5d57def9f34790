/**
 * The workspace volume of a docker sandbox: a named volume that outlives its container, on a file system
 * of its own of the sandbox's `disk_mb` when SANDBOX_DISKS is on and the engine runs on this host.
 */
import type Docker from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { notFound, statusOf } from './docker-engine-errors';
import { SANDBOX_LABEL as LABEL, sandboxNames } from './docker-sandbox-names';
import type { SandboxDisks } from './process-disks';

export class WorkspaceVolumes {
  constructor(
    private readonly docker: Docker,
    /** The disks of the volumes, mounted in the tree's `docker-workspaces` on this host (DockerProviderOptions.disks). */
    private readonly disks: SandboxDisks | undefined,
  ) {}

  /** Whether the engine runs on this host and sees its file system (its first answer is kept; a failed ask is asked again). */
  private engineHere?: Promise<boolean>;
  private engineOnThisHost(): Promise<boolean> {
    this.engineHere ??= this.docker.info().then(
      (info: { Name?: string; DockerRootDir?: string }) =>
        info.Name === os.hostname() && !!info.DockerRootDir && fs.existsSync(info.DockerRootDir),
      (e: unknown) => {
        this.engineHere = undefined;
        throw e;
      },
    );
    return this.engineHere;
  }

  /**
   * The sandbox's workspace volume: on a file system of its own of `diskMb` when disks are given and the
   * engine is here (mounted again after a reboot), else a plain volume. A volume made before (a replaced
   * container) is kept as it was made.
   */
  async ensureVolume(sandboxId: string, diskMb: number | null): Promise<void> {
    const { volume } = sandboxNames(sandboxId);
    const docker = this.docker;
    const disks = this.disks;
    if (!disks) {
      await docker.createVolume({ Name: volume, Labels: { [LABEL]: sandboxId } }); // one that exists is answered as it is
      return;
    }
    const existing = await docker
      .getVolume(volume)
      .inspect()
      .catch((e: unknown) => notFound<{ Options?: Record<string, string> | null }>(e));
    const dir = path.join(disks.tree.path('docker-workspaces'), sandboxId);
    if (existing) {
      if (existing.Options?.device === dir && diskMb) {
        disks.tree.make('docker-workspaces');
        await disks.attach(sandboxId, dir, diskMb); // mounted again after a reboot
      }
      return;
    }
    if (!diskMb || !(await this.engineOnThisHost())) {
      await docker.createVolume({ Name: volume, Labels: { [LABEL]: sandboxId } });
      return;
    }
    disks.tree.make('docker-workspaces');
    await disks.attach(sandboxId, dir, diskMb);
    // Empty, so the engine fills it from the image's directory, owner included, as it does a new volume.
    fs.rmSync(path.join(dir, 'lost+found'), { recursive: true, force: true });
    await docker.createVolume({
      Name: volume,
      Labels: { [LABEL]: sandboxId },
      Driver: 'local',
      DriverOpts: { type: 'none', o: 'bind', device: dir },
    });
  }

  /** Removes the volume (its container is gone), then its file system and mount point; a missing one is no error. */
  async removeVolume(sandboxId: string): Promise<void> {
    const ignoreMissing = (e: unknown) => {
      if (statusOf(e) !== 404) throw e;
    };
    await this.docker.getVolume(sandboxNames(sandboxId).volume).remove().catch(ignoreMissing);
    const disks = this.disks;
    if (disks) {
      const dir = path.join(disks.tree.path('docker-workspaces'), sandboxId);
      await disks.detach(sandboxId, dir);
      fs.rmdir(dir, () => undefined); // the empty mount point; one not empty stays for a look
    }
  }
}
