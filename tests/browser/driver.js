// driver.js PAGE_PORT NAME=RPC_PORT...: serves kv_watch.html on
// http://127.0.0.1:PAGE_PORT (the origin jrpcd's `origins` lists, or not),
// opens it in headless chromium with puppeteer-core once per jrpcd
// listener, in order (the page sets the key NAME), waits (bounded) for the page to show the kv.changed
// it received or to finish refused, and prints each step the page showed
// as "NAME STEP TEXT" lines.
"use strict";
const http = require("http");
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");

const [pagePort, ...runs] = process.argv.slice(2);
const html = fs.readFileSync(path.join(__dirname, "kv_watch.html"));
const STEPS = ["ws", "watch", "set", "changed"];

async function main() {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(html);
  });
  await new Promise((res) => server.listen(Number(pagePort), "127.0.0.1", res));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // Chromium refuses to start its sandbox as root (CI and this machine
    // run the tests as root); the page is our own, served from loopback.
    args: ["--no-sandbox", "--disable-gpu"],
  });
  try {
    for (const run of runs) {
      const [name, rpcPort] = run.split("=");
      const page = await browser.newPage();
      page.on("console", (m) => console.log(name + " console " + m.text()));
      // The OPTIONS preflight is the browser's own request, outside the
      // page's: DevTools' network events are where it can be seen.
      const cdp = await page.createCDPSession();
      await cdp.send("Network.enable");
      cdp.on("Network.requestWillBeSent", (e) => {
        if (e.request.method === "OPTIONS") console.log(name + " preflight " + e.request.url);
      });
      await page.goto(`http://127.0.0.1:${pagePort}/?rpc=${rpcPort}&key=${name}`, { timeout: 10000 });
      await page
        .waitForSelector("#changed, #done", { timeout: 10000 })
        .catch(() => console.log(name + " timeout waiting for #changed or #done"));
      for (const id of STEPS) {
        const text = await page.$eval("#" + id, (e) => e.textContent).catch(() => null);
        if (text !== null) console.log(name + " " + id + " " + text);
      }
      await page.close();
    }
  } finally {
    await browser.close();
    server.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.log("error " + e.stack);
    process.exit(1);
  },
);
