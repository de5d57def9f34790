/** SPEC 2.5, 3.2, 4.4: sandboxes, their statuses and the specs (templates) they start from. */
import { z } from 'zod';
import { ENV_VAR_NAME } from './common';

/**
 * SPEC 3.2 names STARTING; the rest are ours. RUNNING: the runtime answers. PAUSED: stopped on request
 * or after idling, resumable. ERROR: the runtime failed to start or stopped answering (status_detail says
 * why; resume restarts it). MISSING: the provider no longer knows the sandbox (a paused process that was
 * killed, a container removed outside the service). DELETED: removed on request; the record stays so the
 * id keeps answering, but nothing can be done with it any more.
 */
export const SANDBOX_STATUSES = ['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'MISSING', 'DELETED'] as const;
export const SandboxStatusSchema = z.enum(SANDBOX_STATUSES).meta({ id: 'SandboxStatus' });
export type SandboxStatus = z.infer<typeof SandboxStatusSchema>;

export const SANDBOX_PROVIDERS = ['process', 'docker', 'remote'] as const;
export const SandboxProviderSchema = z.enum(SANDBOX_PROVIDERS).meta({ id: 'SandboxProvider' });
export type SandboxProviderName = z.infer<typeof SandboxProviderSchema>;

/**
 * The agent server a sandbox runs: `built-in`, this project's TypeScript runtime (src/runtime/, no
 * Python), or `openhands`, the real OpenHands agent server (PyPI openhands-agent-server, pinned in
 * runtimes/openhands/requirements.lock). The control plane talks to either through one client
 * (src/sandboxes/runtime-client.ts); nothing else knows which.
 */
export const RUNTIME_KINDS = ['built-in', 'openhands'] as const;
export const RuntimeKindSchema = z.enum(RUNTIME_KINDS).meta({ id: 'RuntimeKind' });
export type RuntimeKind = z.infer<typeof RuntimeKindSchema>;

/** The header a sandbox's runtime takes its session key in (and reports events with). */
export const SESSION_KEY_HEADER = 'X-Session-API-Key';
/** Name of the exposed URL where the runtime (agent server) answers. */
export const AGENT_SERVER = 'AGENT_SERVER';

export const ExposedUrlSchema = z
  .object({ name: z.string(), url: z.string(), port: z.number().int() })
  .meta({ id: 'ExposedUrl' });
export type ExposedUrl = z.infer<typeof ExposedUrlSchema>;

export const SandboxSchema = z
  .object({
    id: z.string(),
    created_by_user_id: z.string(),
    sandbox_spec_id: z.string(),
    status: SandboxStatusSchema,
    session_api_key: z
      .string()
      .nullable()
      .meta({ description: 'The key the runtime accepts; present only while RUNNING.' }),
    exposed_urls: z
      .array(ExposedUrlSchema)
      .meta({ description: 'AGENT_SERVER and whatever else the provider exposes.' }),
    created_at: z.iso.datetime(),
    status_detail: z
      .string()
      .nullable()
      .meta({ description: 'Why the sandbox is in its status, when there is more to say.' }),
  })
  .meta({ id: 'Sandbox', description: 'SPEC 2.5' });
export type SandboxView = z.infer<typeof SandboxSchema>;

export const SandboxPageSchema = z
  .object({ items: z.array(SandboxSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'SandboxPage' });

/** Resource limits of a sandbox: every process of it together (a container, or a process sandbox's cgroup and file system). */
const LIMIT_DESCRIPTIONS = {
  memory_mb: "Memory limit in MiB, swap included; null: the operator's default (SANDBOX_DEFAULT_MEMORY_MB).",
  cpus: "CPU limit in cores, fractions allowed; null: the operator's default (SANDBOX_DEFAULT_CPUS).",
  pids_limit: "Most processes and threads at once; null: the operator's default (SANDBOX_DEFAULT_PIDS_LIMIT).",
  disk_mb:
    "Size in MiB of a process sandbox's file system (its workspace, home and state); null: the operator's default (SANDBOX_DEFAULT_DISK_MB).",
};

const specId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
  error: 'letters, digits, . _ - (at most 100), starting with a letter or digit',
});

/** What an operator writes to define a spec (SANDBOX_SPECS_FILE); the stored record adds created_at. */
export const SandboxSpecInputSchema = z
  .strictObject({
    id: specId,
    provider: SandboxProviderSchema,
    runtime: RuntimeKindSchema.default('built-in').meta({
      description: 'The agent server it runs: built-in, or openhands (the real OpenHands agent server).',
    }),
    image: z.string().min(1).nullable().default(null).meta({ description: 'Container image (docker, remote).' }),
    command: z
      .array(z.string().min(1))
      .min(1)
      .nullable()
      .default(null)
      .meta({ description: 'Runtime command; null runs the built-in runtime (process) or the image default.' }),
    working_dir: z.string().min(1).nullable().default(null).meta({
      description: 'Workspace of the runtime: relative to the sandbox directory (process) or absolute (containers).',
    }),
    initial_env: z
      .record(z.string().regex(ENV_VAR_NAME), z.string())
      .meta({ propertyNames: { type: 'string', pattern: ENV_VAR_NAME.source } })
      .default({}),
    memory_mb: z
      .number()
      .int()
      .min(64)
      .max(1_048_576)
      .nullable()
      .default(null)
      .meta({ description: LIMIT_DESCRIPTIONS.memory_mb }),
    cpus: z.number().positive().max(1024).nullable().default(null).meta({ description: LIMIT_DESCRIPTIONS.cpus }),
    pids_limit: z
      .number()
      .int()
      .min(16)
      .max(4_194_304)
      .nullable()
      .default(null)
      .meta({ description: LIMIT_DESCRIPTIONS.pids_limit }),
    disk_mb: z
      .number()
      .int()
      .min(64)
      .max(16_777_216)
      .nullable()
      .default(null)
      .meta({ description: LIMIT_DESCRIPTIONS.disk_mb }),
  })
  .superRefine((s, ctx) => {
    if (s.provider !== 'process' && !s.image)
      ctx.addIssue({ code: 'custom', path: ['image'], message: `a ${s.provider} spec needs an image` });
  });
export type SandboxSpecInput = z.output<typeof SandboxSpecInputSchema>;

export const SandboxSpecSchema = z
  .object({
    id: z.string(),
    provider: SandboxProviderSchema,
    runtime: RuntimeKindSchema,
    image: z.string().nullable(),
    command: z.array(z.string()).nullable(),
    working_dir: z.string().nullable(),
    initial_env: z.record(z.string(), z.string()),
    memory_mb: z.number().int().nullable().meta({ description: LIMIT_DESCRIPTIONS.memory_mb }),
    cpus: z.number().nullable().meta({ description: LIMIT_DESCRIPTIONS.cpus }),
    pids_limit: z.number().int().nullable().meta({ description: LIMIT_DESCRIPTIONS.pids_limit }),
    disk_mb: z.number().int().nullable().meta({ description: LIMIT_DESCRIPTIONS.disk_mb }),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'SandboxSpec', description: 'A template sandboxes start from.' });
export type SandboxSpecView = z.infer<typeof SandboxSpecSchema>;

export const SandboxSpecPageSchema = z
  .object({ items: z.array(SandboxSpecSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'SandboxSpecPage' });

/** A spec as the workflow and providers use it (created_at is bookkeeping). */
export type SandboxSpec = Omit<SandboxSpecView, 'created_at'>;
