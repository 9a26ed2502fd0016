/**
 * What keeps web pages out of the servers a laptop runs without authentication: the local API
 * (local/http-server.ts; it identifies no caller, so it acts for every tenant) and the dashboard
 * proxy (proxy.ts; it signs with the operator's AWS credentials). A page the user visits could
 * otherwise reach them: through DNS rebinding (a name of the page's that turns to 127.0.0.1, so
 * the browser takes the server for the page's own origin, and reads and writes at will), or
 * with a plain cross-site form (a POST without a body asks for no JSON media type: a cancel or a
 * retry). Browsers name the server as the page addressed it (`Host`) and say which page asks
 * (`Origin`, on every cross-origin request and every POST); the CLI, the SDK and curl send no
 * `Origin`.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Whether a bind address or a name is this machine's loopback. */
export function isLoopback(name: string): boolean {
  const bare = name.toLowerCase().replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

/** The name of a `Host` header or an origin's host, without its port. */
function hostnameOf(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
}

/**
 * Why a request must be refused, or undefined: bound to a loopback address, it must name the
 * server by a loopback name (a rebound name is refused); and from a page, the page must be the
 * server's own (its `Origin` the `Host` it asked).
 */
export function foreignOriginRefusal(headers: IncomingHttpHeaders, boundHost: string): string | undefined {
  const host = headers.host ?? '';
  if (isLoopback(boundHost) && !isLoopback(hostnameOf(host))) {
    return `This server answers only to a loopback name (localhost, 127.0.0.1, [::1]), not to ${JSON.stringify(host)}: a web page's name rebound to this machine`;
  }
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  let asked: string | undefined;
  try {
    asked = new URL(origin).host;
  } catch {
    asked = undefined;
  }
  if (asked === undefined || asked === '' || asked.toLowerCase() !== host.toLowerCase()) {
    return `A web page of another origin (${origin}) may not call this server`;
  }
  return undefined;
}

/** The refusal's answer, in the API's error shape. */
export function foreignOriginBody(message: string): string {
  return JSON.stringify({ error: { code: 'foreign_origin', message } });
}
