import { z } from 'zod';

/** SPEC 2.7: one entry of HTTPValidationError. */
export const ValidationErrorSchema = z
  .object({
    loc: z.array(z.union([z.string(), z.number().int()])),
    msg: z.string(),
    type: z.string(),
    input: z.unknown().optional(),
    ctx: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'ValidationError' });

export const HTTPValidationErrorSchema = z
  .object({ detail: z.array(ValidationErrorSchema) })
  .meta({ id: 'HTTPValidationError', description: 'Invalid path, query or body (422).' });

/** Body of every error other than 422. */
export const ErrorResponseSchema = z
  .object({ detail: z.string() })
  .meta({ id: 'ErrorResponse', description: 'A human-readable reason; never a stack trace.' });
