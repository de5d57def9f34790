/**
 * The runtime's HTTP API (first part): liveness, health, running a command and moving files (the
 * conversations and the git views are in their own route files), each but
 * /alive behind the sandbox's session key. Built from the same pieces as the service's api (route specs
 * with zod, the one error middleware), so errors look the same: 422 HTTPValidationError, `{detail}`.
 */
import Koa, { type Middleware } from 'koa';
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { SESSION_KEY_HEADER } from '../web/security';
import { errorMiddleware, HttpError, unauthorized } from '../web/errors';
import { requestContext } from '../web/request-context';
import { ApiRouter } from '../web/route';
import type { Logger } from '../logger';
import { ErrorResponseSchema } from '../schemas/errors';
import { listenOn } from '../process/net';
import { executeBash } from './bash';
import { ConversationRegistry } from './agent/conversation-registry';
import { conversationRoutes } from './conversation-routes';
import { gitRoutes } from './git-routes';
import { GitViews } from './git-views';
import type { RuntimeConfig } from './runtime-config';
import { PathEscapeError, resolveInside } from './workspace-paths';

const BashRequestSchema = z
  .strictObject({
    command: z.string().min(1),
    cwd: z
      .string()
      .min(1)
      .nullable()
      .optional()
      .meta({ description: 'Relative to the working directory (default: it).' }),
    timeout: z
      .number()
      .positive()
      .max(24 * 3600)
      .default(300)
      .meta({ description: 'Seconds before the command is killed.' }),
  })
  .meta({ id: 'ExecuteBashRequest' });

const BashResultSchema = z
  .object({ exit_code: z.number().int(), output: z.string(), timed_out: z.boolean() })
  .meta({ id: 'ExecuteBashResult' });

const FileQuerySchema = z.object({
  path: z.string().min(1).meta({ description: 'Relative to the working directory.' }),
});

function sessionKeyCheck(expected: string): Middleware {
  const want = Buffer.from(expected);
  return async (ctx, next) => {
    const got = Buffer.from(ctx.get(SESSION_KEY_HEADER));
    if (got.length === 0) throw unauthorized(`Missing ${SESSION_KEY_HEADER} header`);
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw unauthorized(`Invalid ${SESSION_KEY_HEADER}`);
    return next();
  };
}

function confined(root: string, requested: string): string {
  try {
    return resolveInside(root, requested);
  } catch (e) {
    if (e instanceof PathEscapeError) throw new HttpError(400, e.message);
    throw e;
  }
}

/** The command's environment: the runtime's own, minus its session key. */
export function commandEnv(): NodeJS.ProcessEnv {
  const { SESSION_API_KEY: _key, ...rest } = process.env;
  return rest;
}

export function createRuntimeApp(config: RuntimeConfig, logger: Logger, registry: ConversationRegistry): Koa {
  const started = Date.now();
  const keyCheck = sessionKeyCheck(config.sessionApiKey);
  // The runtime knows one credential; both scheme names map to it.
  const router = new ApiRouter({
    prefix: '',
    tag: 'runtime',
    auth: { APIKeyHeader: keyCheck, SessionAPIKeyHeader: keyCheck },
    maxBodyBytes: 1024 * 1024,
  });
  const error = (description: string) => ({ description, schema: ErrorResponseSchema });

  router
    .route(
      {
        method: 'get',
        path: '/alive',
        operationId: 'alive',
        summary: 'Liveness',
        security: null,
        responses: { 200: { description: 'Up' } },
      },
      (ctx) => {
        ctx.body = { status: 'ok' };
      },
    )
    .route(
      {
        method: 'get',
        path: '/health',
        operationId: 'health',
        summary: 'Health',
        security: 'SessionAPIKeyHeader',
        responses: { 200: { description: 'Healthy' } },
      },
      (ctx) => {
        ctx.body = {
          status: 'ok',
          uptime_s: Math.round((Date.now() - started) / 1000),
          working_dir: config.workingDir,
          pid: process.pid,
        };
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/bash/execute_bash_command',
        operationId: 'executeBashCommand',
        summary: 'Run a shell command in the working directory',
        security: 'SessionAPIKeyHeader',
        body: BashRequestSchema,
        responses: {
          200: { description: 'The exit code and the (capped) output', schema: BashResultSchema },
          400: error('cwd outside the working directory'),
        },
      },
      async (ctx, { body }) => {
        const cwd = confined(config.workingDir, body.cwd ?? '.');
        if (!fs.statSync(cwd, { throwIfNoEntry: false })?.isDirectory())
          throw new HttpError(400, `cwd ${JSON.stringify(body.cwd)} is not a directory`);
        ctx.body = await executeBash({
          command: body.command,
          cwd,
          timeoutMs: body.timeout * 1000,
          maxOutputBytes: config.maxOutputBytes,
          env: commandEnv(),
        });
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/file/upload',
        operationId: 'uploadFile',
        summary: 'Write the request body (application/octet-stream) to a file, creating its directories',
        security: 'SessionAPIKeyHeader',
        query: FileQuerySchema,
        responses: {
          200: { description: 'Written' },
          400: error('Path outside the working directory'),
          413: error('Larger than the upload limit'),
        },
      },
      async (ctx, { query }) => {
        const target = confined(config.workingDir, query.path);
        if (ctx.request.length !== undefined && ctx.request.length > config.maxUploadBytes) {
          throw new HttpError(413, `Upload is larger than the limit of ${config.maxUploadBytes} bytes`);
        }
        await fs.promises.mkdir(path.dirname(target), { recursive: true });
        const partial = `${target}.upload-${process.pid}-${Date.now()}`;
        let size = 0;
        const limit = config.maxUploadBytes;
        try {
          await pipeline(
            ctx.req,
            async function* (source: AsyncIterable<Buffer>) {
              for await (const chunk of source) {
                size += chunk.length;
                if (size > limit) throw new HttpError(413, `Upload is larger than the limit of ${limit} bytes`);
                yield chunk;
              }
            },
            fs.createWriteStream(partial),
          );
          await fs.promises.rename(partial, target);
        } catch (e) {
          await fs.promises.rm(partial, { force: true });
          throw e;
        }
        ctx.body = { path: path.relative(fs.realpathSync(config.workingDir), target), size };
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/file/download',
        operationId: 'downloadFile',
        summary: 'Read a file',
        security: 'SessionAPIKeyHeader',
        query: FileQuerySchema,
        responses: {
          200: { description: 'The file', contentType: 'application/octet-stream' },
          400: error('Path outside the working directory, or a directory'),
          404: error('No such file'),
        },
      },
      async (ctx, { query }) => {
        const target = confined(config.workingDir, query.path);
        const stat = await fs.promises.stat(target).catch(() => null);
        if (!stat) throw new HttpError(404, `No such file: ${query.path}`);
        if (!stat.isFile()) throw new HttpError(400, `Not a file: ${query.path}`);
        ctx.type = 'application/octet-stream';
        ctx.length = stat.size;
        ctx.attachment(path.basename(target));
        ctx.body = fs.createReadStream(target);
      },
    );

  conversationRoutes(router, registry);
  gitRoutes(router, new GitViews({ workingDir: config.workingDir }));

  const koa = new Koa({ proxy: false });
  koa.use(requestContext(logger));
  koa.use(errorMiddleware());
  koa.use(router.router.routes()).use(router.router.allowedMethods());
  return koa;
}

export interface RuntimeServer {
  url: string;
  server: http.Server;
  conversations: ConversationRegistry;
  close(): Promise<void>;
}

export async function startRuntimeServer(config: RuntimeConfig, logger: Logger): Promise<RuntimeServer> {
  fs.mkdirSync(config.workingDir, { recursive: true });
  const conversations = new ConversationRegistry({
    stateDir: config.stateDir,
    workingDir: config.workingDir,
    controlPlaneUrl: config.controlPlaneUrl,
    sessionApiKey: config.sessionApiKey,
    maxOutputBytes: config.maxOutputBytes,
    baseEnv: commandEnv(),
    logger,
  });
  conversations.loadAll();
  const server = http.createServer(createRuntimeApp(config, logger, conversations).callback());
  server.requestTimeout = 0; // commands may run for hours
  await listenOn(server, config.port, config.host, (err) => logger.error({ err }, 'the runtime listener failed'));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host}:${port}`,
    server,
    conversations,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
