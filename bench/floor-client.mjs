// The floor for the poll-cost benchmark: the least a poller can do in plain Node — a keep-alive
// GET of the Scheduled Events document once per interval, body read and JSON-parsed, nothing else.
import http from 'node:http';

const [url, intervalArg] = process.argv.slice(2);
if (!url) throw new Error('usage: floor-client.mjs <scheduled-events-url> [intervalMs]');
const intervalMs = Number(intervalArg ?? 1000);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function poll() {
  http
    .get(url, { agent, headers: { Metadata: 'true', 'user-agent': 'floor' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => {
        JSON.parse(body);
      });
    })
    .on('error', () => undefined);
}

setInterval(poll, intervalMs);
poll();
process.on('SIGTERM', () => process.exit(0));
