// Shared by the console's browser tests: a fresh migrated database on the
// engine of SPOOL_CONSOLE_ENGINE (sqlite or postgres), the real `spool serve`
// on it, Debian's chromium through puppeteer-core, SQL through the engine's
// own CLI (sqlite3 or psql), and screenshots kept as test artifacts. A
// component that cannot start fails the test loudly. SPOOL_CONSOLE_BROWSER
// picks the browser: chromium (Debian's, over CDP) or firefox (Debian's
// firefox-esr, over WebDriver BiDi).
import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { spawnServe } from "../support/serve_process.mjs";

export const cli = process.env.SPOOL_CLI;
if (!cli) throw new Error("SPOOL_CLI must name the spool binary (it is set by CTest)");
export const engine = process.env.SPOOL_CONSOLE_ENGINE ?? "sqlite";
export const browserName = process.env.SPOOL_CONSOLE_BROWSER ?? "chromium";
const browsers = {
  chromium: { path: process.env.SPOOL_CHROMIUM ?? "/usr/bin/chromium", package: "chromium" },
  firefox: { path: process.env.SPOOL_FIREFOX ?? "/usr/bin/firefox-esr", package: "firefox-esr" },
};
if (!browsers[browserName]) throw new Error(`SPOOL_CONSOLE_BROWSER=${browserName}: expected chromium or firefox`);
const executable = browsers[browserName].path;
if (!existsSync(executable)) {
  throw new Error(`no browser at ${executable}: install Debian's ${browsers[browserName].package} (make deps)`);
}
export const artifacts = process.env.SPOOL_CONSOLE_ARTIFACTS ?? join(tmpdir(), "spool-console-artifacts");
mkdirSync(artifacts, { recursive: true });

// A fresh database: { uri, sql(text) → rows of text columns, dir }.
export function freshDatabase() {
  const dir = mkdtempSync(join(tmpdir(), "spool-console-"));
  let uri;
  let sql;
  if (engine === "sqlite") {
    const file = join(dir, "console.db");
    uri = `sqlite:${file}`;
    sql = (text) => execFileSync("sqlite3", ["-batch", "-separator", "\t", file, text], { encoding: "utf8" });
  } else if (engine === "postgres") {
    const admin = readFileSync(join(process.env.SPOOL_TEST_PG_DIR, "uri"), "utf8").trim();
    const name = "console_" + randomBytes(6).toString("hex");
    execFileSync("psql", [admin, "-q", "-c", `CREATE DATABASE ${name}`]);
    uri = admin.slice(0, admin.lastIndexOf("/") + 1) + name;
    sql = (text) => execFileSync("psql", [uri, "-qAtX", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", text], { encoding: "utf8" });
  } else {
    throw new Error(`SPOOL_CONSOLE_ENGINE must be sqlite or postgres, not ${engine}`);
  }
  execFileSync(cli, ["--db", uri, "migrate"]);
  const rows = (text) => sql(text).split("\n").filter((l) => l !== "").map((l) => l.split("\t"));
  return { uri, dir, sql, rows, one: (text) => rows(text)[0]?.[0] };
}

export function spoolJson(uri, args, input) {
  return JSON.parse(execFileSync(cli, ["--db", uri, "--json", ...args], { encoding: "utf8", input }));
}

// Starts spool serve on uri with extra arguments; returns { url, stop() }.
export async function startServer(uri, extra = []) {
  return spawnServe(cli, ["--db", uri, "serve", "--listen", "127.0.0.1:0", "--no-auth", ...extra]);
}

// Runs a spool command in the background until done() holds (checked every
// 100 ms, up to 60 s), then stops it with SIGTERM.
export async function runUntil(args, done) {
  const child = spawn(cli, args, { stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  try {
    for (let i = 0; i < 600; i++) {
      if (done()) return;
      if (child.exitCode !== null) throw new Error(`spool ${args.join(" ")} exited ${child.exitCode} early`);
      await sleep(100);
    }
    throw new Error(`spool ${args.join(" ")}: the awaited state never came`);
  } finally {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
  }
}

export async function launchBrowser() {
  if (browserName === "firefox") {
    return puppeteer.launch({
      browser: "firefox",
      executablePath: executable,
      headless: true,
      protocolTimeout: 30000,
      // Timers of background tabs run at full speed, as chromium's flags below ask.
      extraPrefsFirefox: { "dom.min_background_timeout_value": 0, "dom.timeout.enable_budget_timer_throttling": false },
    });
  }
  return puppeteer.launch({
    executablePath: executable,
    headless: true,
    // A call that hangs fails the test within 30 s instead of the default 180 s.
    protocolTimeout: 30000,
    // Background tabs keep their timers: the test watches one tab refresh while it acts in another.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-timer-throttling",
           "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows"],
  });
}

export async function screenshot(page, name, fullPage = true) {
  const prefix = browserName === "chromium" ? engine : `${browserName}-${engine}`;
  await page.screenshot({ path: join(artifacts, `${prefix}-${name}.png`), fullPage });
}

// The texts of the cells of a table's body rows.
export async function tableRows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
}

// Opens a console address and waits until the router has rendered that page:
// the app marks <main data-rendered> with the hash whose view it finished, so
// what the test reads next is never the previous page still on screen. An
// address the page already shows is reloaded, as no hashchange would fire.
export async function openView(page, url) {
  const target = new URL(url);
  if (page.url() === target.href) await page.reload();
  else await page.goto(target.href);
  await settled(page, target.hash);
}

// Waits until the page the router has rendered is the one the address bar
// names (after a click or a form that changed the hash).
export async function settled(page, hash = null) {
  await page.waitForFunction((h) => document.getElementById("main")?.dataset.rendered === (h ?? location.hash), {}, hash);
}

export function cleanup(db) {
  rmSync(db.dir, { recursive: true, force: true });
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export { writeFileSync, join };
