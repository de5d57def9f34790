/**
 * Checks an answer against the OpenAPI document the api serves: the response schema of its operation and
 * status (JSON Schema 2020-12, as OpenAPI 3.1 writes it), and no writeOnly field in it.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

export interface AnswerCheck {
  /** The schema errors of `body` as the answer of `method path` with `status` ([] when it validates). */
  errors(method: string, path: string, status: number, body: unknown): string[];
}

const pointer = (...parts: string[]) =>
  parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

export function answerCheck(doc: any): AnswerCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  // A writeOnly field may be sent, never answered (OpenAPI 3.1, JSON Schema's annotation).
  ajv.removeKeyword('writeOnly');
  ajv.addKeyword({ keyword: 'writeOnly', schemaType: 'boolean', validate: (writeOnly: boolean) => !writeOnly });
  ajv.addSchema(doc, 'openapi');
  return {
    errors(method, path, status, body) {
      const operation = doc.paths[path]?.[method.toLowerCase()];
      if (!operation) return [`${method} ${path} is not in the document`];
      const response = operation.responses[String(status)];
      if (!response) return [`${method} ${path} does not document ${status}`];
      if (!response.content?.['application/json']) return [];
      const ref = `openapi#/${pointer('paths', path, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema')}`;
      const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
      return validate(body)
        ? []
        : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} (${e.schemaPath})`);
    },
  };
}

/** A path template of the document as a matcher, and how literal it is (the more literal segments, the sooner it wins). */
interface Template {
  path: string;
  pattern: RegExp;
  literals: number;
}

const templatesOf = (doc: any): Template[] =>
  Object.keys(doc.paths)
    .map((p) => {
      const segments = p.split('/');
      const pattern = new RegExp(
        '^' +
          segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/') +
          '$',
      );
      return { path: p, pattern, literals: segments.filter((s) => !s.startsWith('{')).length };
    })
    .sort((a, b) => b.literals - a.literals);

/**
 * The document path of the operation that answers `method` on `url` (its query aside), or undefined when
 * the document has none (a route outside the api's document: /ready, the runtime's webhooks' sockets).
 */
export function documentedPath(doc: any, templates: Template[], method: string, url: string): string | undefined {
  const p = url.split('?')[0]!;
  return templates.find((t) => t.pattern.test(p) && doc.paths[t.path][method.toLowerCase()])?.path;
}

/**
 * Every answer of the shared test client checked against the document the api serves: an answer of a
 * documented operation must have a documented status, and a JSON body that its schema allows.
 */
export function documentedAnswers(
  doc: any,
): (method: string, url: string, status: number, body: unknown, contentType: string | null) => string[] {
  const check = answerCheck(doc);
  const templates = templatesOf(doc);
  return (method, url, status, body, contentType) => {
    const p = documentedPath(doc, templates, method, url);
    if (!p) return [];
    if (contentType !== null && !contentType.startsWith('application/json'))
      return check.errors(method, p, status, undefined).filter((e) => e.includes('does not document'));
    return check.errors(method, p, status, body);
  };
}
