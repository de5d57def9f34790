/** The docker CLI against an engine, with the classic builder (it reads .dockerignore and needs no buildx). */
import { runCaptured } from '../run-captured';

export function docker(host: string, args: string[], opts: { input?: NodeJS.ReadableStream } = {}): Promise<string> {
  return runCaptured('docker', args, {
    env: { ...process.env, DOCKER_HOST: host, DOCKER_BUILDKIT: '0' },
    input: opts.input,
    tailLines: 30,
    failure: (code, tail) => `docker ${args.slice(0, 2).join(' ')} exited with ${code}:\n${tail}`,
  });
}
