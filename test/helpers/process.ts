import { spawn } from 'node:child_process';

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end, collecting its output; kills it and fails after `timeoutMs`. */
export function runToEnd(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not end; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The agent's CLI from source, on the Node that runs the tests (the project's Node 24). */
export function cli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs?: number,
): Promise<Finished> {
  return runToEnd(
    process.execPath,
    ['src/cli.ts', ...args],
    { ...process.env, NO_COLOR: '1', ...env },
    timeoutMs,
  );
}
