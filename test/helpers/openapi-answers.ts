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
