import { createServer, request, type Server } from 'node:http';

/**
 * An HTTP proxy in front of the Stripe double that holds only the requests `shouldHold`
 * picks (say, the listing of the third slice), until the test releases them; the rest
 * pass at once. How a test stops a sweep at a known slice, with its earlier slices
 * committed, for as long as it needs and without timing guesses.
 */
export interface ValveProxy {
  url: string;
  /** Resolves when the first request is being held. */
  held: Promise<void>;
  release(): void;
  close(): Promise<void>;
}

export async function startValveProxy(target: string, shouldHold: (path: string) => boolean): Promise<ValveProxy> {
  const upstream = new URL(target);
  let open!: () => void;
  const released = new Promise<void>((resolve) => (open = resolve));
  let holding!: () => void;
  const held = new Promise<void>((resolve) => (holding = resolve));
  const server: Server = createServer((req, res) => {
    const hold = shouldHold(decodeURIComponent(req.url ?? ''));
    if (hold) holding();
    void (hold ? released : Promise.resolve()).then(() => {
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
    held,
    release: open,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The `created[gte]` of a charge listing request (unix seconds), or null for any other request. */
export function listedFrom(path: string): number | null {
  if (!path.startsWith('/v1/charges?')) return null;
  const gte = new URLSearchParams(path.slice(path.indexOf('?') + 1)).get('created[gte]');
  return gte === null ? null : Number(gte);
}
