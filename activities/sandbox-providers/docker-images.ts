/** The image of a docker sandbox: used when the engine has it, else pulled (its progress reported). */
import type Docker from 'dockerode';
import { statusOf } from './docker-engine-errors';
import { ProviderConfigError } from './provider';

export async function ensureImage(docker: Docker, image: string, progress?: () => void): Promise<void> {
  try {
    await docker.getImage(image).inspect();
    return;
  } catch (e) {
    if (statusOf(e) !== 404) throw e;
  }
  try {
    const stream = await docker.pull(image);
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        () => progress?.(),
      ),
    );
  } catch (e) {
    // No registry answers, or it does not have the image: a retry would fail the same way.
    throw new ProviderConfigError(
      `the image ${image} is not on the Docker engine and pulling it failed: ${(e as Error).message}`,
    );
  }
}
