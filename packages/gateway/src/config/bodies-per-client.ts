/**
 * The default of `upstream.maxBodies`: half of `upstream.connections`, at least 1 (64 of the default 128). Bodies
 * arrive at the client's pace, which D-G47 lets run for hours; with half of the pool kept for requests without a
 * body, slow but legal uploads from any number of addresses leave every other request a connection, and uploads
 * still have as many connections as most upstreams serve at once. Never 0, which would turn the share off: a pool
 * of one connection lets bodies have it.
 *
 * @param connections - `upstream.connections`, an integer >= 1.
 * @returns the share, an integer >= 1.
 */
export function defaultMaxBodies(connections: number): number {
  return Math.max(1, Math.floor(connections / 2));
}

/**
 * The default of `upstream.maxBodiesPerClient`: a quarter of the connections bodies may hold (`upstream.maxBodies`,
 * or every connection when that is `0`), at least 1 (16 of the default 64). A client streaming that many slow but
 * legal bodies still leaves three quarters of the share to other uploaders, and 16 is well above the six
 * connections a browser opens to one host, so an office behind one NAT address is not refused for ordinary
 * uploads. Never 0, which would turn the cap off.
 *
 * @param maxBodies - `upstream.maxBodies` as resolved, an integer >= 0.
 * @param connections - `upstream.connections`, an integer >= 1.
 * @returns the cap, an integer >= 1.
 */
export function defaultBodiesPerClient(maxBodies: number, connections: number): number {
  return Math.max(1, Math.floor((maxBodies === 0 ? connections : maxBodies) / 4));
}
