/** The cache folder of every installed Node.js line. */
export declare const NODE_CACHE: string;
/** The bin folder of Node.js `line` in the cache, installed from npm when missing. */
export declare function nodeLine(line: string, options?: { stdio?: 'inherit' | 'ignore' | 'pipe' }): string;
/** `node --version` of a binary, or '' when it does not run. */
export declare function nodeVersion(node: string): string;
