import { z } from 'zod';
import type { SinkDefinition } from '../types.ts';

const settings = z.object({
  type: z.literal('file'),
  path: z.string().min(1, 'a file path is required'),
  /** The current file is rotated to <path>.1 once it would exceed this. */
  rotateBytes: z
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  /** How many rotated files are kept beside the current one. */
  keepFiles: z.number().int().min(0).max(100).default(5),
});

export const fileSinkDefinition = {
  type: 'file',
  settings,
  async create(s, ctx) {
    const { FileSink } = await import('./file-sink.ts');
    return FileSink.open({ path: s.path, rotateBytes: s.rotateBytes, keepFiles: s.keepFiles, log: ctx.log });
  },
} satisfies SinkDefinition<typeof settings>;
