/**
 * The runtime's own environment (it runs inside a sandbox, not beside the service): where to listen,
 * the session key it accepts, its working directory. Set by the sandbox provider that starts it.
 */
import path from 'node:path';
import { z } from 'zod';

const positiveInt = z.coerce.number().int().positive();

const runtimeEnvSchema = z.object({
  RUNTIME_HOST: z.string().min(1).default('127.0.0.1'),
  RUNTIME_PORT: z.coerce.number().int().min(0).max(65535),
  /** Every route but /alive requires this key in X-Session-API-Key. */
  SESSION_API_KEY: z.string().min(16),
  /** Commands run here; file routes are confined to it. */
  RUNTIME_WORKING_DIR: z.string().min(1),
  /** The sandbox's directory (process provider): when it disappears the runtime exits. */
  RUNTIME_SANDBOX_DIR: z.string().min(1).optional(),
  /** The control plane's api, where conversation events are reported (POST /api/v1/webhooks/events/...). */
  CONTROL_PLANE_URL: z.url().optional(),
  /** Conversations (settings and event outboxes); default: <sandbox dir>/conversations, else beside the working dir. */
  RUNTIME_STATE_DIR: z.string().min(1).optional(),
  RUNTIME_MAX_OUTPUT_BYTES: positiveInt.default(1024 * 1024),
  RUNTIME_MAX_UPLOAD_BYTES: positiveInt.default(100 * 1024 * 1024),
});

export interface RuntimeConfig {
  host: string;
  port: number;
  sessionApiKey: string;
  workingDir: string;
  sandboxDir: string | undefined;
  controlPlaneUrl: string | undefined;
  stateDir: string;
  maxOutputBytes: number;
  maxUploadBytes: number;
}

export function loadRuntimeConfig(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const r = runtimeEnvSchema.safeParse(env);
  if (!r.success) {
    throw new Error(
      `Invalid runtime configuration:\n${r.error.issues.map((i) => `  - ${i.path.join('.')}: ${i.message}`).join('\n')}`,
    );
  }
  const e = r.data;
  return {
    host: e.RUNTIME_HOST,
    port: e.RUNTIME_PORT,
    sessionApiKey: e.SESSION_API_KEY,
    workingDir: path.resolve(e.RUNTIME_WORKING_DIR),
    sandboxDir: e.RUNTIME_SANDBOX_DIR && path.resolve(e.RUNTIME_SANDBOX_DIR),
    controlPlaneUrl: e.CONTROL_PLANE_URL?.replace(/\/+$/, ''),
    stateDir: path.resolve(
      e.RUNTIME_STATE_DIR ??
        (e.RUNTIME_SANDBOX_DIR
          ? path.join(e.RUNTIME_SANDBOX_DIR, 'conversations')
          : path.join(path.dirname(path.resolve(e.RUNTIME_WORKING_DIR)), '.agent-runtime', 'conversations')),
    ),
    maxOutputBytes: e.RUNTIME_MAX_OUTPUT_BYTES,
    maxUploadBytes: e.RUNTIME_MAX_UPLOAD_BYTES,
  };
}
