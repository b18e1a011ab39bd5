/** Types of scripts/system-tools.mjs, for the TypeScript test helpers that read the same table. */

/** The programs the test suite starts for real. */
export type SystemToolName =
  | 'redis-server'
  | 'redis-cli'
  | 'chromium'
  | 'promtool'
  | 'prometheus'
  | 'nginx'
  | 'openssl'
  | 'podman'
  | 'runc';

/** One row of {@link SYSTEM_TOOLS}. */
export interface SystemTool {
  /** The command name. */
  readonly name: SystemToolName;
  /** The Debian package that brings it. */
  readonly apt: string;
  /** The variable that names another binary (absolute path or command name). */
  readonly binVar: string;
  /** The variable that opts the suites needing this tool out. */
  readonly optOut: string;
}

/** Every program the suite starts, with its package and variables. */
export declare const SYSTEM_TOOLS: readonly SystemTool[];
/** The one command that installs every missing tool. */
export declare const INSTALL_COMMAND: string;
/** The row of `name`; throws on an unknown name. */
export declare function systemTool(name: string): SystemTool;
/** The absolute path of the tool, or undefined when it is not installed. */
export declare function findTool(name: SystemToolName, env?: NodeJS.ProcessEnv): string | undefined;
/** True when the tool's opt-out variable is set. */
export declare function isOptedOut(name: SystemToolName, env?: NodeJS.ProcessEnv): boolean;
/** The tools neither found nor opted out. */
export declare function missingTools(env?: NodeJS.ProcessEnv): SystemTool[];
/** What is missing, the command that installs it and how to opt out. */
export declare function missingToolsMessage(missing: readonly SystemTool[], command?: string): string;
