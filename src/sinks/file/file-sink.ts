import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fsyncDir } from '../../fs-durable.ts';
import type { Logger } from '../../log.ts';
import type { ScheduledEventRecord } from '../../transform/record.ts';
import { failed, ok, retryable, type SendResult, type Sink } from '../types.ts';

type Handle = Awaited<ReturnType<typeof open>>;

export interface FileSinkOptions {
  readonly path: string;
  readonly rotateBytes: number;
  readonly keepFiles: number;
  readonly log: Logger;
}

/** JSON lines, fsync'd before `ok`, rotated by size: <path>, <path>.1 (newest rotated) … <path>.N. */
export class FileSink implements Sink {
  private fh: Handle | null;
  private size: number;
  private closed = false;
  /** Sends run one after the other: they share the file handle, its size and rotation. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly o: FileSinkOptions;

  private constructor(o: FileSinkOptions, fh: Handle, size: number) {
    this.o = o;
    this.fh = fh;
    this.size = size;
  }

  static async open(o: FileSinkOptions): Promise<FileSink> {
    await mkdir(dirname(o.path), { recursive: true });
    const fh = await open(o.path, 'a+', 0o640);
    const size = await dropTornTail(fh, o);
    return new FileSink(o, fh, size);
  }

  send(batch: readonly ScheduledEventRecord[]): Promise<SendResult> {
    const run = this.queue.then(() => this.write(batch));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async write(batch: readonly ScheduledEventRecord[]): Promise<SendResult> {
    if (this.closed) return failed('file sink is closed');
    const data = Buffer.from(`${batch.map((r) => JSON.stringify(r)).join('\n')}\n`);
    try {
      // After a failed rotation (directory gone, disk full) the file is opened again here.
      this.fh ??= await this.reopen();
      if (this.size > 0 && this.size + data.length > this.o.rotateBytes) await this.rotate();
      const fh = this.fh!;
      try {
        await fh.appendFile(data);
        await fh.sync();
      } catch (err) {
        // No partial batch may stay behind: the retry writes the whole batch again.
        await fh.truncate(this.size).catch(() => {
          this.fh = null;
        });
        throw err;
      }
      this.size += data.length;
      return ok;
    } catch (err) {
      // Disk full or a vanished directory heal by themselves or by an operator: retry, don't drop.
      return retryable(`writing ${this.o.path}: ${(err as Error).message}`);
    }
  }

  private async reopen(): Promise<Handle> {
    await mkdir(dirname(this.o.path), { recursive: true });
    const fh = await open(this.o.path, 'a+', 0o640);
    this.size = (await fh.stat()).size;
    return fh;
  }

  private async rotate(): Promise<void> {
    const { path, keepFiles } = this.o;
    await this.fh?.close();
    this.fh = null;
    if (keepFiles === 0) {
      await rm(path, { force: true });
    } else {
      await rm(`${path}.${keepFiles}`, { force: true });
      for (let i = keepFiles - 1; i >= 1; i--) {
        await rename(`${path}.${i}`, `${path}.${i + 1}`).catch(ignoreMissing);
      }
      await rename(path, `${path}.1`);
    }
    this.fh = await this.reopen();
    await fsyncDir(dirname(path));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    const fh = this.fh;
    this.fh = null;
    await fh?.close();
  }
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}

/**
 * A crash mid-write can leave a partial last line. It is cut off: the spool cursor did not
 * advance for it, so the whole batch is written again.
 */
async function dropTornTail(fh: Handle, o: FileSinkOptions): Promise<number> {
  const { size } = await stat(o.path);
  if (size === 0) return 0;
  const window = Math.min(size, 1024 * 1024);
  const buf = Buffer.alloc(window);
  await fh.read(buf, 0, window, size - window);
  if (buf[window - 1] === 0x0a) return size;
  const lastNewline = buf.lastIndexOf(0x0a);
  const keep = lastNewline === -1 ? (window === size ? 0 : size - window) : size - window + lastNewline + 1;
  await fh.truncate(keep);
  await fh.sync();
  o.log.warn(
    { path: o.path, droppedBytes: size - keep },
    'file sink: removed a partial last line left by a crash',
  );
  return keep;
}
