import { createServer, request, type Server } from 'node:http';

/**
 * An HTTP proxy in front of the Stripe double that can hold requests until the test
 * opens the gate: how a test keeps a sweep busy (holding its lock) for exactly as
 * long as it needs, with no timing guesses.
 */
export interface GatedProxy {
  url: string;
  /** Resolves when the first request is being held. */
  firstHeld: Promise<void>;
  open(): void;
  close(): Promise<void>;
}

export async function startGatedProxy(target: string): Promise<GatedProxy> {
  const upstream = new URL(target);
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  let held!: () => void;
  const firstHeld = new Promise<void>((resolve) => (held = resolve));
  const server: Server = createServer((req, res) => {
    held();
    void gate.then(() => {
      const forward = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    firstHeld,
    open: openGate,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
