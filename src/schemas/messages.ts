/**
 * Messages a client sends to an agent (the reference's SendMessageRequest and AppSendMessageRequest):
 * text and image content, a role, and whether the agent runs on it. One source for the start's
 * initial_message, the control plane's send-message and pending messages, and the runtime's own route.
 */
import { z } from 'zod';
import { TextContentSchema } from './events';

export const ImageContentSchema = z
  .strictObject({
    image_urls: z
      .array(z.string().min(1).max(10_000_000).meta({ description: 'An http(s) URL or a data: URL.' }))
      .min(1)
      .max(20),
    type: z.literal('image').default('image'),
    cache_prompt: z.boolean().default(false),
  })
  .meta({ id: 'ImageContent' });

export const MessageContentSchema = z
  .array(z.union([TextContentSchema, ImageContentSchema]))
  .min(1)
  .max(100)
  .meta({ description: 'Text and image blocks, in order.' });

/**
 * The reference's SendMessageRequest: any role, `run` false unless asked (its default), and `content`
 * optional, as published: a start's initial_message without content (or with none) sends no message.
 */
export const SendMessageRequestSchema = z
  .strictObject({
    role: z.enum(['user', 'system', 'assistant', 'tool']).default('user'),
    content: z
      .array(z.union([TextContentSchema, ImageContentSchema]))
      .max(100)
      .default([])
      .meta({ description: 'Text and image blocks, in order; none: no message is sent.' }),
    run: z.boolean().default(false).meta({ description: 'Run the agent on this message when it is not running.' }),
  })
  .meta({ id: 'SendMessageRequest' });
export type SendMessageRequest = z.output<typeof SendMessageRequestSchema>;
export type MessageContent = z.output<typeof MessageContentSchema>;
