/**
 * The layers of the code and what each may import, checked by ESLint on every relative import (the rule
 * `layers/imports-go-down` below). A unit is a folder of src/ (src/store), a file at src/'s root
 * (src/errors), or a top-level folder (activities, worker). A unit may import itself and the units listed
 * for it; nothing else. Tests, benches and scripts may import anything. README's "Layout" section says the
 * same in prose: change both together.
 */
const path = require('node:path');

/** Pure building blocks: schemas and the contract types, errors, configuration, crypto, processes, logs, bounded reads and waits. */
const BASE = [
  'src/schemas',
  'src/errors',
  'src/config',
  'src/temporal',
  'src/process',
  'src/llm',
  'src/auth',
  'src/logger',
  'src/observability',
  'src/read-body',
  'src/deadline',
];
/** Services and the live feed: what the product does, over the stores; no transport. */
const DOMAIN = ['src/live', 'src/events', 'src/orgs', 'src/sandboxes', 'src/app-conversations', 'src/git'];

const LAYERS = {
  'src/schemas': [],
  'src/errors': ['src/schemas'],
  'src/config': ['src/schemas'],
  'src/temporal': ['src/schemas', 'src/errors', 'src/deadline'],
  'src/process': [],
  'src/read-body': [],
  'src/deadline': [],
  'src/llm': ['src/schemas'],
  'src/auth': ['src/schemas', 'src/errors', 'src/config'],
  'src/logger': ['src/config'],
  'src/observability': ['src/config', 'src/schemas', 'src/process'],
  'src/store': BASE,
  /** The HTTP kit shared by the api and the in-sandbox runtime: router, body reading, errors to answers. */
  'src/web': ['src/schemas', 'src/errors', 'src/config', 'src/logger'],
  ...Object.fromEntries(DOMAIN.map((d) => [d, [...BASE, 'src/store', ...DOMAIN]])),
  /** The composition root's factories: builds the stores and services over the handles it is given. */
  'src/composition': [...BASE, 'src/store', ...DOMAIN],
  /** The api's HTTP surface: routers, credentials, readiness, the OpenAPI document. */
  'src/http': [...BASE, 'src/store', ...DOMAIN, 'src/web'],
  /** The api's and the CLI's entry points: they compose everything below. */
  'src/api': [...BASE, 'src/store', ...DOMAIN, 'src/composition', 'src/web', 'src/http'],
  /** The TCP balancer in front of a scaled api: configuration, logs and the listen helper, nothing of the api. */
  'src/gateway': ['src/config', 'src/logger', 'src/process'],
  /** The typed client of the api: its generated types only, nothing of the server. */
  'src/client': [],
  'src/cli': [...BASE, 'src/store', ...DOMAIN, 'src/composition', 'src/client'],
  /** The in-sandbox runtime: its own HTTP server on the kit, and nothing of the control plane's state. */
  'src/runtime': [
    'src/schemas',
    'src/read-body',
    'src/deadline',
    'src/errors',
    'src/config',
    'src/logger',
    'src/process',
    'src/observability',
    'src/web',
  ],
  activities: [...BASE, 'src/store', ...DOMAIN],
  /** Workflows: the contract and types only (the workflow rules in eslint.config.js say which imports). */
  workflows: ['src/temporal', 'src/schemas', 'activities'],
  worker: [...BASE, 'src/store', ...DOMAIN, 'src/composition', 'activities'],
};

function unitOf(root, file) {
  const rel = path.relative(root, file).split(path.sep);
  if (rel[0] === '..' || rel.length < 2) return null;
  if (rel[0] !== 'src') return rel[0];
  return rel.length === 2 ? `src/${rel[1].replace(/\.(ts|js)$/, '')}` : `src/${rel[1]}`;
}

const importsGoDown = {
  meta: {
    type: 'problem',
    docs: { description: 'A module imports only its own layer and the layers below it (scripts/lint/layers.js).' },
    schema: [],
    messages: {
      up: '{{from}} may not import {{to}} ({{spec}}): it may import only {{allowed}}. The layers are in scripts/lint/layers.js.',
    },
  },
  create(context) {
    // The project's root, wherever ESLint runs from (an editor, a subfolder).
    const root = path.resolve(__dirname, '..', '..');
    const from = unitOf(root, context.filename);
    const allowed = from && LAYERS[from];
    if (!allowed) return {};
    /** The module a source node names: a string, or a template literal without substitutions. */
    const specOf = (source) => {
      if (!source) return null;
      if (source.type === 'Literal' && typeof source.value === 'string') return source.value;
      if (source.type === 'TemplateLiteral' && source.expressions.length === 0) return source.quasis[0].value.cooked;
      // `import(x)` with a computed name, and typescript-eslint's TSImportType (`import('...').T`) whose argument is a literal type
      if (source.type === 'TSLiteralType') return specOf(source.literal);
      return null;
    };
    const checkSource = (source) => {
      const spec = specOf(source);
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const to = unitOf(root, path.resolve(path.dirname(context.filename), spec));
      if (!to || to === from || allowed.includes(to)) return;
      context.report({
        node: source,
        messageId: 'up',
        data: { from, to, spec, allowed: allowed.join(', ') || 'nothing outside itself' },
      });
    };
    const check = (node) => checkSource(node.source);
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
      TSImportType: (node) => checkSource(node.source ?? node.argument),
      TSExternalModuleReference: (node) => checkSource(node.expression),
      'CallExpression[callee.name="require"]': (node) => checkSource(node.arguments[0]),
    };
  },
};

module.exports = { LAYERS, plugin: { rules: { 'imports-go-down': importsGoDown } } };
