// Lint: type-aware rules everywhere (no floating promises), and the workflow sandbox rules for workflows/:
// no Node built-ins, no I/O libraries, no clock or randomness outside the workflow APIs.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');
const layers = require('./scripts/lint/layers');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'jest.config.js', 'eslint.config.js', 'scripts/lint/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    plugins: { layers: layers.plugin },
    rules: {
      'layers/imports-go-down': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflows are deterministic: no Node built-ins; use an activity.',
          })),
          patterns: [
            {
              group: [
                'mongodb',
                'koa',
                '@koa/*',
                'ws',
                'pino*',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
              ],
              message: 'Workflows do no I/O: call an activity.',
            },
            {
              group: ['../activities', '../activities/*'],
              allowTypeImports: true,
              message: 'Import activities as types only (proxyActivities).',
            },
            {
              regex: '^\\.\\./src/(?!temporal/shared$)',
              allowTypeImports: true,
              message: 'Workflows may import only types and workflow-safe modules (src/temporal/shared) from src/.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message: 'Use workflow time (Date in the sandbox is replayed) via workflowInfo or sleep.',
        },
        {
          object: 'Math',
          property: 'random',
          message: 'Use uuid4() or the replayed Math.random of the workflow sandbox deliberately.',
        },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'fetch', 'process'],
    },
  },
);
