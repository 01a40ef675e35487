/**
 * The JSON inference routes served straight from `Deno.serve`'s request: the same handler as every
 * other way in (core/http/inference.ts), reached without Hono building its context, running its
 * router and composing the middleware chain. Taken only for a POST to an exact JSON route, and
 * only when the router runs no middleware on those routes but client auth, which `Router.direct`
 * applies itself (it is unset with CORS origins); everything else goes to the app as before. What
 * it saved is in docs/benchmarks.md (round 6).
 *
 * The app's path check (core/http/path-hygiene.ts) needs no second look here: an exact JSON route
 * has no dot segment, encoded slash, backslash or NUL, and on Deno the app sees the same URL.
 */
import { toResponse } from '../../core/contracts/answer.ts';
import { jsonRouteOf, requestInbound } from '../../core/http/inbound.ts';
import type { Inference } from '../../core/http/inference.ts';

type Handler = (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>;

/** A `Deno.serve` handler that serves the JSON inference routes itself and hands the rest to `app`. */
export function directHandler(inference: Inference | undefined, app: Handler): Handler {
  if (inference === undefined) return app;
  return (req, info) => {
    const route = jsonRouteOf(inference.jsonRoutes, req.method, req.url);
    if (route === undefined) return app(req, info);
    return inference
      .serve(route, requestInbound(req, info.remoteAddr.hostname))
      .then(toResponse, (err: unknown) => toResponse(inference.internalError(route, err)));
  };
}
