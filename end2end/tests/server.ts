// A real Countersign server per test file: the built binary on a free loopback port, with its
// own data directory and workspace, and the demo agent.
import { spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface RunningServer {
  url: string;
  token: string;
  workspace: string;
  dataDir: string;
  /** SIGKILL the process (a real crash), leaving its data in place. */
  crash: () => Promise<void>;
  /** SIGTERM the process (an ordinary stop) and wait for it to exit, leaving its data in place. */
  halt: () => Promise<void>;
  /** Start again on the same address and data. */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
}

export const BIN = process.env.COUNTERSIGN_BIN || resolve(__dirname, '../../target/debug/countersign');

function spawnServer(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child: ChildProcess = spawn(BIN, args, { cwd: resolve(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += d.toString(); });
  return new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('server did not start: ' + out + stderr)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m) { clearTimeout(timer); ok({ child, url: m[1] }); }
    });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited ${code}: ${stderr}`)); });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

export interface ServerOptions {
  /** TOML written to a config file beside the data dir and passed with `--config`. */
  config?: string;
}

export async function startServer(extraArgs: string[] = [], options: ServerOptions = {}): Promise<RunningServer> {
  const root = mkdtempSync(join(tmpdir(), 'countersign-e2e-'));
  const dataDir = join(root, 'data');
  const workspace = join(root, 'workspace');
  const token = 'e2e-token-' + Math.random().toString(36).slice(2);
  const configArgs: string[] = [];
  if (options.config !== undefined) {
    const configFile = join(root, 'config.toml');
    writeFileSync(configFile, options.config);
    configArgs.push('--config', configFile);
  }
  const args = (addr: string) => ['serve', '--addr', addr, '--data-dir', dataDir, '--workspace', workspace,
    '--token', token, ...configArgs, ...extraArgs];
  let { child, url } = await spawnServer(args('127.0.0.1:0'));
  const addr = url.replace('http://', '');
  return {
    url, token, workspace, dataDir,
    crash: async () => { child.kill('SIGKILL'); await exited(child); },
    halt: async () => { child.kill('SIGTERM'); await exited(child); },
    restart: async () => { ({ child } = await spawnServer(args(addr))); },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited(child);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
