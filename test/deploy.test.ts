import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../src/config/load.ts';
import { useTempDirs } from './helpers/fs.ts';

const tempDir = useTempDirs();
const RENDER = 'deploy/vmss/render-cloud-init.sh';

function render(args: string[]) {
  const r = spawnSync(RENDER, args, { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('scale-set rollout (cloud-init)', () => {
  it('renders a cloud-config that writes the agent config, installs Node 24 and the agent, and starts the service', async () => {
    const dir = await tempDir();
    const config = {
      stateDir: '/var/lib/scheduled-events-forwarder',
      sinks: [{ type: 'file', path: '/var/log/sef/records.jsonl' }],
    };
    const configPath = join(dir, 'agent.json');
    writeFileSync(configPath, JSON.stringify(config));
    const r = render(['--config', configPath, '-p', 'scheduled-events-forwarder@0.1.0']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith('#cloud-config\n')).toBe(true);
    const doc = parseYaml(r.stdout) as {
      write_files: { path: string; encoding?: string; content: string }[];
      runcmd: string[][];
    };
    const agentJson = doc.write_files.find((f) => f.path === '/etc/scheduled-events-forwarder/agent.json')!;
    expect(agentJson.encoding).toBe('b64');
    const written = JSON.parse(Buffer.from(agentJson.content, 'base64').toString('utf8'));
    expect(written).toEqual(config);
    // What the VM gets is a configuration the agent accepts.
    expect(() => parseConfig(written, {}, {})).not.toThrow();

    const unit = doc.write_files.find((f) => f.path.endsWith('scheduled-events-forwarder.service'))!.content;
    const bin = Object.keys(JSON.parse(readFileSync('package.json', 'utf8')).bin)[0];
    expect(unit).toMatch(
      new RegExp(`ExecStart=/usr/local/bin/${bin} run --config /etc/scheduled-events-forwarder/agent.json`),
    );
    // The service's state directory is the stateDir the deployment puts in the config.
    expect(unit).toMatch(/StateDirectory=scheduled-events-forwarder/);
    // A configuration error (exit 2) is not retried in a loop.
    expect(unit).toMatch(/RestartPreventExitStatus=2/);
    expect(readFileSync('infra/bicep/main.bicep', 'utf8')).toMatch(
      /stateDir: '\/var\/lib\/scheduled-events-forwarder'/,
    );
    expect(doc.runcmd).toEqual(
      expect.arrayContaining([
        ['npm', 'install', '--global', 'node@24'],
        ['npm', 'install', '--global', 'scheduled-events-forwarder@0.1.0'],
        ['systemctl', 'enable', '--now', 'scheduled-events-forwarder.service'],
      ]),
    );
  });

  it('refuses missing arguments and a config without sinks, saying why', async () => {
    const missing = render(['--config', '/dev/null']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/-p <agent-package> is required/);
    const dir = await tempDir();
    writeFileSync(join(dir, 'empty.json'), '{"stateDir":"/x"}');
    const noSinks = render(['--config', join(dir, 'empty.json'), '-p', 'x']);
    expect(noSinks.code).toBe(1);
    expect(noSinks.stderr).toMatch(/has no sinks/);
  });

  it('the Custom Script Extension installer is valid bash and writes the same unit', () => {
    expect(spawnSync('bash', ['-n', 'deploy/vmss/install-agent.sh']).status).toBe(0);
    expect(readFileSync('deploy/vmss/install-agent.sh', 'utf8')).toMatch(/cloud-init\.yaml\.tmpl/);
  });
});
