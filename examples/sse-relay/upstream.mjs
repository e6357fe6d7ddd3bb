/**
 * A stand-in for an LLM provider's streaming endpoint, for the relay demos:
 * POST /v1/messages answers a text/event-stream of Anthropic-shaped events,
 * one token every `interval` ms. Its first answer is `overloaded_error` as the
 * first event (what a provider under load does), so the demo shows staunch
 * retrying it. It counts requests and open connections, and says through
 * `log` when a stream's connection closes before its end: the relay aborted
 * the request because its client left.
 */
import { createServer } from 'node:http';

export async function startUpstream({
  tokens = 20,
  interval = 100,
  overloadFirst = true,
  log = () => {},
} = {}) {
  const stats = { requests: 0, open: 0, closed: 0 };
  const server = createServer((req, res) => {
    const n = stats.requests++;
    stats.open++;
    let sent = 0;
    let ended = false;
    req.socket.once('close', () => {
      stats.open--;
      stats.closed++;
      if (!ended) {
        log(
          `upstream: request ${n + 1} closed after ${sent} of ${tokens} tokens: the client left, and the relay aborted it`,
        );
      }
    });
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (overloadFirst && n === 0) {
      ended = true;
      res.end(
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
      );
      return;
    }
    res.write('event: message_start\ndata: {"type":"message_start"}\n\n');
    const timer = setInterval(() => {
      if (sent === tokens) {
        clearInterval(timer);
        ended = true;
        res.end('event: message_stop\ndata: {"type":"message_stop"}\n\n');
        return;
      }
      res.write(`event: content_block_delta\ndata: {"text":"token ${sent++} "}\n\n`);
    }, interval);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1/messages`,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}
