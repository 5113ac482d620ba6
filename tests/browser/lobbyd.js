// Starts a lobbyd of the tests' own for tests/browser/: the general lobby only, on free
// loopback ports (its TCP port and its WebSocket port serving examples/web), an account
// database in a temporary folder; `stop()` ends it (SIGTERM, SIGKILL after 3 s) and removes
// the folder. LOBBYD_BIN names the binary (default target/debug/lobbyd).

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A port free on loopback now (the OS's pick, released for lobbyd to bind). */
function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** Resolves once something accepts TCP connections on `port`; rejects after `ms` or if `gone()`. */
async function listening(port, ms, gone) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (gone()) throw new Error('lobbyd exited before listening');
    const up = await new Promise((ok) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); ok(true); });
      socket.on('error', () => ok(false));
    });
    if (up) return;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`nothing listening on ${port} after ${ms} ms`);
}

/**
 * Starts lobbyd with `extraArgs` added; resolves once its WebSocket port listens, with
 * `{ wsPort, lobbyPort, httpUrl, wsUrl, log(), stop() }`.
 */
export async function startLobbyd(extraArgs = []) {
  const binary = process.env.LOBBYD_BIN ?? join(ROOT, 'target', 'debug', 'lobbyd');
  if (!existsSync(binary)) throw new Error(`${binary} not built (make test-browser builds it)`);
  const dataDir = mkdtempSync(join(tmpdir(), 'lobbyd-browser-'));
  const [wsPort, lobbyPort] = [await freePort(), await freePort()];
  const child = spawn(binary, [
    '--bind', '127.0.0.1', '--udp-port', '0', '--tcp-port', '0', '--wz-port', '0',
    '--instance-ports', '0', '--lobby-port', String(lobbyPort),
    '--lobby-ws-port', String(wsPort), '--lobby-web', join(ROOT, 'examples', 'web'),
    '--db', join(dataDir, 'lobbyd.sqlite'), '--log', 'warn', ...extraArgs,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (chunk) => { output = (output + chunk).slice(-8000); });
  }
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((ok) => child.once('exit', ok));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await listening(wsPort, 10_000, () => child.exitCode !== null || child.signalCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`${error.message}; lobbyd's output:\n${output}`);
  }
  return {
    wsPort,
    lobbyPort,
    httpUrl: `http://127.0.0.1:${wsPort}/`,
    wsUrl: `ws://127.0.0.1:${wsPort}/lobby`,
    log: () => output,
    stop,
  };
}
