import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const servers = globalThis.__agentControlServers;
  if (!servers) return;
  await Promise.all(servers.children.map((c) => c.stop(5000)));
  fs.rmSync(servers.dir, { recursive: true, force: true });
}
