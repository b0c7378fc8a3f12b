// The real `spool serve` for the JavaScript tests (tests/serve/js, tests/console):
// started with the given arguments, ready once it prints "listening on URL",
// stopped with SIGTERM, which must end it with exit status 0.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";

export async function spawnServe(cli, args) {
  const server = spawn(cli, args, { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const m = seen.match(/listening on (https?:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`spool serve exited ${code}: ${seen}`)));
  });
  const stop = async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.on("exit", resolve));
      server.kill("SIGTERM");
      assert.equal(await exited, 0);
    }
  };
  return { url, stop };
}
