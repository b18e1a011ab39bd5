/** The cache folder of every installed Node.js line. */
export declare const NODE_CACHE: string;
/** The main Node.js line: what `npm test` and CI run first. */
export declare const MAIN_LINE: string;
/** Whether a Node.js version (such as `22.12.0` or `v24.1.0`) is 22.12 or newer, the supported range. */
export declare function supportedNode(version: string): boolean;
/** The bin folder of Node.js `line` in the cache, installed from npm when missing (`quiet`: no output unless it fails). */
export declare function nodeLine(
  line: string,
  options?: { stdio?: 'inherit' | 'ignore' | 'pipe'; quiet?: boolean },
): string;
/** `node --version` of a binary, or '' when it does not run. */
export declare function nodeVersion(node: string): string;
