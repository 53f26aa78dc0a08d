#!/usr/bin/env -S node --liftoff-only --max-semi-space-size=1
// The installed command. Runs the compiled agent (npm run build) with the daemon's V8 flags:
// --liftoff-only keeps V8 from re-compiling undici's WebAssembly HTTP parser with its optimizing
// tier (about 20 MB of RSS for a parser that reads one small answer a second), and a 1 MB
// semi-space keeps the young generation small for an agent that allocates little. See
// bench/poll-cost.ts and README "Performance".
import { runCli } from '../dist/src/cli.js';

runCli(process.argv);
