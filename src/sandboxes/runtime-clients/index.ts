/** The client of a sandbox's runtime, by the agent server its spec runs. */
import type { SecretBox } from '../../auth/secret-box';
import type { SandboxRecord } from '../../store/sandboxes-store';
import type { RuntimeClient } from '../runtime-client';
import { BuiltInRuntimeClient } from './built-in';
import { OpenHandsRuntimeClient } from './openhands';

export function runtimeClient(record: SandboxRecord, box: SecretBox): RuntimeClient {
  switch (record.spec.runtime) {
    case 'openhands':
      return OpenHandsRuntimeClient.of(record, box);
    case 'built-in':
      return BuiltInRuntimeClient.of(record, box);
  }
}
