/** How the Docker objects of a sandbox are found again: their names and the label they carry. */

export const SANDBOX_LABEL = 'agent-control.sandbox-id';

/** The sandbox's container, workspace volume and own network, all named after it. */
export function sandboxNames(sandboxId: string) {
  const name = `agent-control-sandbox-${sandboxId}`;
  return { container: name, volume: name, network: name };
}
