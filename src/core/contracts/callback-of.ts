/**
 * A callback that calls `fn(target, ...args)`: how a request's own objects hand out a listener on
 * themselves (a client's abort, a stop hook, the stall watch's abandon, a timer's expiry).
 *
 * Why not an arrow function in the class (`readonly onAbort = () => this.abort()`), or one made in
 * the function that holds the object (`o.f = () => o.x`): on V8 15 (Deno 2.9), an object that keeps
 * such a closure, made in its own class or by the function that built it, survives every young
 * collection until the next full one, and so does everything it references (why is V8's; a closure
 * made by a separate function that takes the object as an argument does not do it). In a 15-line server program on Deno, a class
 * with such an arrow field promoted 11 % of what the requests allocated and ran a full collection
 * every second; the same class with `callbackOf(this, fn)` promoted 0.07 %. The router on Deno
 * promoted 8.5 % of its allocation, about 2 MB at every young collection, until its request objects
 * made their callbacks here: 1 %. Node 20 (V8 11.3) shows no difference. A closure made here holds
 * only this function's arguments, and dies with the request. docs/benchmarks.md, round 10.
 */
export function callbackOf<T, A extends unknown[]>(
  target: T,
  fn: (target: T, ...args: A) => void,
): (...args: A) => void {
  return (...args) => fn(target, ...args);
}
