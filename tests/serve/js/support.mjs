// Shared by the JavaScript SDK tests: a fresh database on the engine of
// SPOOL_SQS_ENGINE (sqlite or postgres), the real `spool serve` on it with a
// credentials file, and a signed SQSClient. A component that cannot start
// fails the test loudly.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQSClient } from "@aws-sdk/client-sqs";
import { spawnServe } from "../../support/serve_process.mjs";

export const cli = process.env.SPOOL_CLI;
if (!cli) throw new Error("SPOOL_CLI must name the spool binary (it is set by CTest)");
const engine = process.env.SPOOL_SQS_ENGINE ?? "sqlite";

function freshDatabase(dir) {
  if (engine === "sqlite") return `sqlite:${dir}/sqs.db`;
  if (engine !== "postgres") throw new Error(`SPOOL_SQS_ENGINE must be sqlite or postgres, not ${engine}`);
  const admin = readFileSync(join(process.env.SPOOL_TEST_PG_DIR, "uri"), "utf8").trim();
  const name = "sqs_js_" + randomBytes(6).toString("hex");
  execFileSync("psql", [admin, "-q", "-c", `CREATE DATABASE ${name}`]);
  return admin.slice(0, admin.lastIndexOf("/") + 1) + name;
}

export const account = "210987654321";
export const key = { accessKeyId: "AKIDJSTEST", secretAccessKey: "js/Secret+Key" };

// Starts spool serve on a migrated database; returns { uri, endpoint, sqs, client(credentials), stop() }.
export async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), "spool-sqs-js-"));
  const uri = freshDatabase(dir);
  execFileSync(cli, ["--db", uri, "migrate"]);
  const creds = join(dir, "credentials");
  writeFileSync(creds, `${key.accessKeyId} ${key.secretAccessKey} ${account}\n`);
  const server = await spawnServe(cli, ["--db", uri, "serve", "--listen", "127.0.0.1:0", "--credentials", creds]);
  const endpoint = server.url;
  const client = (credentials = key) => new SQSClient({ endpoint, region: "eu-central-1", maxAttempts: 1, credentials });
  const sqs = client();
  const stop = async () => {
    sqs.destroy();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { uri, endpoint, sqs, client, stop };
}

// The SDK's exception name of a failed call; fails when the call succeeds.
export async function errorOf(promise) {
  try {
    await promise;
  } catch (e) {
    return e.name;
  }
  throw new Error("the call succeeded");
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
