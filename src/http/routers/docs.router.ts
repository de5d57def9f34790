import fs from 'node:fs';
import path from 'node:path';
import type { ApiRouter } from '../../web/route';

const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Agent Conversation Control Service - API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', persistAuthorization: true });</script>
</body>
</html>
`;

/**
 * GET /openapi.json, and a readable page over it at /docs (Swagger UI, served from its npm package).
 * Like FastAPI's, these two describe the API and are not part of the document themselves.
 */
export function docsRoutes(router: ApiRouter, document: () => object): ApiRouter {
  router.router.get('/openapi.json', (ctx) => {
    ctx.body = document();
  });
  router.router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_HTML;
  });
  router.router.get('/docs/:asset', (ctx) => {
    const type = ASSETS[ctx.params.asset ?? ''];
    if (!type) return;
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(swaggerDir, ctx.params.asset!));
  });
  return router;
}
