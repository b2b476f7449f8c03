// The server's SQLite database, read and written from a test as anyone who can open that file
// could (Python's sqlite3: no npm module needed). The server keeps its secrets only as SHA-256
// hashes (table `hashed_secrets`), so what a test finds or writes there is what such a reader
// or writer has: never a credential, only rows.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** Runs `sql` with `params` on the database in `dataDir`; the rows, as JSON arrays. */
export function sqlite(dataDir: string, sql: string, params: unknown[] = []): any[] {
  const script = 'import json,sqlite3,sys\n'
    + 'c=sqlite3.connect(sys.argv[1],timeout=10)\n'
    + 'rows=c.execute(sys.argv[2],json.loads(sys.argv[3])).fetchall()\n'
    + 'c.commit()\nprint(json.dumps(rows))';
  const out = execFileSync('python3', ['-c', script, join(dataDir, 'countersign.db'), sql, JSON.stringify(params)]);
  return JSON.parse(out.toString('utf8'));
}

/** Hex SHA-256 of `text`: how the server keys a secret it keeps. */
export const sha256hex = (text: string) => createHash('sha256').update(text).digest('hex');
