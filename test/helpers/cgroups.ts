/** The machine's cgroup hierarchy, for the suites in test/root that need one (as root). */
import { detectCgroups, type CgroupLayout } from '../../activities/sandbox-providers/cgroup-layout';

/** The hierarchy found on this machine; throws when there is none a sandbox can use. */
export function usableCgroups(): { layout: CgroupLayout } {
  const found = detectCgroups();
  if (!('layout' in found)) throw new Error(`test/root needs a usable cgroup hierarchy: ${found.why}`);
  return found;
}
