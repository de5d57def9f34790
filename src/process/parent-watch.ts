/**
 * A child of the launcher stops itself when the launcher dies without stopping it (kill -9), so no
 * orphan keeps the ports. Only active when the launcher set AGENT_CONTROL_PARENT_PID.
 */
export function exitWithParent(stop: () => void, env: NodeJS.ProcessEnv = process.env): void {
  const expected = Number(env.AGENT_CONTROL_PARENT_PID);
  if (!Number.isInteger(expected) || expected <= 1) return;
  const timer = setInterval(() => {
    if (process.ppid !== expected) {
      clearInterval(timer);
      stop();
    }
  }, 1000);
  timer.unref();
}
