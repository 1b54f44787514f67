// Opens a URL in the desktop's browser, where there is one.

import { spawn } from 'node:child_process';

/** Resolves whether a browser opener could be started. */
export function openUrl(url: string): Promise<boolean> {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, { stdio: 'ignore', detached: true, env: withoutToken(process.env) });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}

/**
 * The environment less the token (JOBTREE_TOKEN): a browser the opener
 * starts keeps its environment for as long as it runs, and hands it to
 * every program it starts in turn.
 */
function withoutToken(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { JOBTREE_TOKEN: _token, ...rest } = env;
  return rest;
}
