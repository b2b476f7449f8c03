// A real Countersign server per test file: the built binary on a free loopback port, with its
// own data directory and workspace, and the demo agent.
import { spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface RunningServer {
  url: string;
  token: string;
  workspace: string;
  dataDir: string;
  stop: () => Promise<void>;
}

const BIN = process.env.COUNTERSIGN_BIN || resolve(__dirname, '../../target/debug/countersign');

export async function startServer(extraArgs: string[] = []): Promise<RunningServer> {
  const root = mkdtempSync(join(tmpdir(), 'countersign-e2e-'));
  const dataDir = join(root, 'data');
  const workspace = join(root, 'workspace');
  const token = 'e2e-token-' + Math.random().toString(36).slice(2);
  const child: ChildProcess = spawn(BIN, [
    'serve', '--addr', '127.0.0.1:0', '--data-dir', dataDir, '--workspace', workspace,
    '--token', token, ...extraArgs,
  ], { cwd: resolve(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => { stderr += d.toString(); });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error('server did not start: ' + out + stderr)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on (http:\/\/[0-9.]+:\d+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited ${code}: ${stderr}`)); });
  });
  return {
    url, token, workspace, dataDir,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
