import { readFileSync } from 'node:fs';

/** The package version, read once at start; it goes into every record as AgentVersion. */
export const AGENT_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
