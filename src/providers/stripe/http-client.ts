import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import Stripe from 'stripe';

/** A response larger than this is cut off: a page of 100 charges is a few hundred kB. */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

type RequestHeaders = Parameters<InstanceType<typeof Stripe.HttpClient>['makeRequest']>[4];
type ResponseHeaders = ConstructorParameters<typeof Stripe.HttpClientResponse>[1];

/**
 * The SDK's Node client with a **total** deadline per request. stripe-node's own
 * `timeout` on Node is an idle timeout (`req.setTimeout`): a server that drips one
 * byte every few seconds keeps a request alive forever. Here one timer covers
 * connecting, the headers and the whole body; when it fires the socket is destroyed
 * and the SDK sees its usual timeout error (a StripeConnectionError, "Request aborted
 * due to timeout being reached"). The idle timeout stays as the SDK passes it.
 */
export class DeadlineHttpClient extends Stripe.HttpClient {
  constructor(private readonly deadlineMs: number) {
    super();
    if (!Number.isFinite(deadlineMs) || deadlineMs <= 0)
      throw new RangeError(`request deadline must be positive (got ${deadlineMs})`);
  }

  override getClientName(): string {
    return 'node';
  }

  override makeRequest(
    host: string,
    port: string,
    path: string,
    method: string,
    headers: RequestHeaders,
    requestData: string,
    protocol: string,
    timeout: number,
  ): Promise<DeadlineResponse> {
    return new Promise((resolve, reject) => {
      const insecure = protocol === 'http';
      const req = (insecure ? http : https).request({
        host,
        port,
        path,
        method,
        agent: insecure ? agents.http : agents.https,
        headers: headers as http.OutgoingHttpHeaders,
        ciphers: 'DEFAULT:!aNULL:!eNULL:!LOW:!EXPORT:!SSLv2:!MD5',
      });
      let timedOut = false;
      const expire = () => {
        timedOut = true;
        req.destroy(Stripe.HttpClient.makeTimeoutError());
      };
      const deadline = setTimeout(expire, this.deadlineMs);
      req.setTimeout(timeout, expire);
      req.on('response', (res: IncomingMessage) => {
        // 'close' comes after the body ended, or when it was cut off: the deadline's work is done.
        res.once('end', () => clearTimeout(deadline));
        res.once('close', () => clearTimeout(deadline));
        resolve(new DeadlineResponse(res, () => timedOut));
      });
      req.on('error', (error) => {
        clearTimeout(deadline);
        reject(error);
      });
      req.end(requestData);
    });
  }
}

export class DeadlineResponse extends Stripe.HttpClientResponse {
  constructor(
    private readonly res: IncomingMessage,
    private readonly timedOut: () => boolean,
  ) {
    super(res.statusCode ?? 0, res.headers as ResponseHeaders);
  }

  override getRawResponse(): IncomingMessage {
    return this.res;
  }

  override toStream(streamCompleteCallback: () => void): IncomingMessage {
    this.res.once('end', () => streamCompleteCallback());
    return this.res;
  }

  dispose(): void {
    this.res.destroy();
  }

  override toJSON(): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const fail = (error: unknown) =>
        reject(Stripe.HttpClient.makeResponseBodyError(this.timedOut() ? Stripe.HttpClient.makeTimeoutError() : error));
      this.res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          this.res.destroy(new Error(`the response is larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      // Without an 'error' listener a stalled or severed body never settles.
      this.res.once('error', fail);
      this.res.once('close', () => {
        if (!this.res.complete) fail(new Error('the response ended before its body was complete'));
      });
      this.res.once('end', () => {
        try {
          resolve(this._parseResponseBody(Buffer.concat(chunks).toString('utf8')));
        } catch (error) {
          reject(error);
        }
      });
    });
  }
}
