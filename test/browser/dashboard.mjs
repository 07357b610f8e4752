// Drives `kubefedctl dashboard` in headless Chromium against a real local
// federation; run by test/e2e/dashboard_test.go, which sets up the objects:
// in namespace $NAMESPACE, FederatedDeployment "broken" fails in $FAILED_CLUSTER
// with the member's error, FederatedConfigMap "fine" is everywhere.
//
//   node dashboard.mjs <the URL kubefedctl dashboard printed, with its token>
//
// It checks that the matrix shows the failed placement in red, that clicking
// it shows the member's error message, that the RSP-scheduled "spread" draws
// its split as bars, that an object created with
// kubectl ($KUBECTL, a command line) appears without a reload and without
// taking away a filter being typed, and that tabs in the background pause
// their live stream, leaving connections for more tabs, and catch up when
// back; it takes a screenshot of every page into $SCREENSHOTS. Any failure
// exits non-zero with a message.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

// The URL kubefedctl printed carries the run's token; the first page sets
// it as a cookie, which every later request sends.
const printed = process.argv[2];
const base = printed ? new URL(printed).origin : "";
const namespace = process.env.NAMESPACE;
const failedCluster = process.env.FAILED_CLUSTER;
const shots = process.env.SCREENSHOTS;
const kubectl = (process.env.KUBECTL || "").split(" ").filter(Boolean);
if (!base || !namespace || !failedCluster || !shots || kubectl.length === 0) {
  console.error("usage: NAMESPACE=… FAILED_CLUSTER=… SCREENSHOTS=… KUBECTL='…' node dashboard.mjs <url>");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

function check(ok, message) {
  if (!ok) {
    throw new Error(message);
  }
}

// Chromium itself has crashed while starting on the loaded 2-CPU machine
// (SIGSEGV before any page opened); starting it is tried up to three
// times. Nothing after the launch is retried.
async function launch() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await chromium.launch({
        executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
        // The machine has no network: Chromium's own background connections
        // would only be refused.
        args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      });
    } catch (err) {
      if (attempt >= 3) {
        throw err;
      }
      console.error(`chromium did not start (attempt ${attempt}): ${String(err.message).split("\n")[0]}`);
    }
  }
}

const browser = await launch();
try {
  // One context, so that the tabs opened below share the token's cookie.
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);

  // Without the token nothing is served.
  const denied = await page.goto(`${base}/objects`);
  check(denied.status() === 401, `without the token the dashboard answered ${denied.status()}`);
  await page.goto(printed);
  check(!page.url().includes("token="), "the token stayed in the address bar");

  // The matrix: the failed placement is red.
  await page.goto(`${base}/objects?ns=${namespace}`);
  await page.locator("#live.on").waitFor();
  const cell = page.locator(`tr[data-name="broken"] td.cell[data-cluster="${failedCluster}"]`);
  await cell.waitFor();
  check(await cell.evaluate((el) => el.classList.contains("failed")), "the failed placement's cell is not marked failed");
  const colour = await cell.evaluate((el) => getComputedStyle(el).backgroundColor);
  check(colour === "rgb(253, 226, 225)", `the failed placement's cell is ${colour}, not red`);
  const fine = page.locator(`tr[data-name="fine"] td.cell[data-cluster="${failedCluster}"]`);
  check(await fine.evaluate((el) => getComputedStyle(el).backgroundColor) === "rgb(218, 251, 225)", "a propagated cell is not green");
  await page.screenshot({ path: join(shots, "dashboard-objects.png"), fullPage: true });

  // One click shows the member's own error.
  await cell.locator("a").click();
  await page.waitForURL(/\/object\?/);
  const message = page.locator(`#cluster-${failedCluster} .cluster-message`);
  await message.waitFor();
  const text = await message.innerText();
  check(/must be greater than or equal to 0/.test(text), `the object page shows "${text}", not the member's error`);
  await page.screenshot({ path: join(shots, "dashboard-object.png"), fullPage: true });

  // A change made with kubectl appears live: no reload (the marker stays),
  // and a filter being typed stays as typed, with the focus.
  await page.goto(`${base}/objects?ns=${namespace}`);
  await page.locator("#live.on").waitFor();
  await page.evaluate(() => { window.kubefedMarker = "not reloaded"; });
  const search = page.locator('form.filters input[name="q"]');
  await search.click();
  await search.pressSequentially("liv");
  const apply = (name) => execFileSync(kubectl[0], [...kubectl.slice(1), "apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "types.kubefed.io/v1beta1", kind: "FederatedConfigMap",
      metadata: { name, namespace },
      spec: { template: { data: { k: "v" } }, placement: { clusterSelector: {} } },
    }),
    stdio: ["pipe", "inherit", "inherit"],
  });
  const started = Date.now();
  apply("live");
  await page.locator('tr[data-name="live"]').waitFor({ timeout: 10000 });
  const seenAfter = Date.now() - started;
  check(await page.evaluate(() => window.kubefedMarker) === "not reloaded", "the page was reloaded to show the change");
  check(await search.inputValue() === "liv", `the filter being typed reads "${await search.inputValue()}" after the update`);
  check(await search.evaluate((el) => el === document.activeElement), "the filter being typed lost the focus");
  console.log(`live: the new object appeared ${seenAfter} ms after kubectl apply returned or began`);

  // Tabs in the background let go of their live stream: with a stream held
  // by every tab, the browser's six connections to the host ran out and
  // the next tab never loaded. Headless pages are all visible; each tab is
  // sent to the background by hand once it is live.
  const setHidden = (tab, hidden) => tab.evaluate((h) => {
    Object.defineProperty(document, "hidden", { configurable: true, get: () => h });
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (h ? "hidden" : "visible") });
    document.dispatchEvent(new Event("visibilitychange"));
  }, hidden);
  const tabs = [];
  for (let i = 0; i < 8; i++) {
    const tab = await context.newPage();
    tabs.push(tab);
    await tab.goto(`${base}/objects?ns=${namespace}`);
    await tab.locator("#live.on").waitFor();
    await setHidden(tab, true);
    await tab.locator("#live.off").waitFor();
  }
  // Back in front, a tab catches up with what changed while it was paused.
  apply("while-paused");
  await setHidden(tabs[0], false);
  await tabs[0].locator("#live.on").waitFor();
  await tabs[0].locator('tr[data-name="while-paused"]').waitFor({ timeout: 10000 });
  for (const tab of tabs) {
    await tab.close();
  }

  // An RSP's split is drawn as bars, widths in proportion (4 and 2 of 6).
  await page.goto(`${base}/object?kind=FederatedDeployment&ns=${namespace}&name=spread`);
  // The RSP may list more clusters (with 0 replicas); member1 and member2
  // hold the replicas.
  const widthOf = (cluster) => page.evaluate((c) => {
    for (const row of document.querySelectorAll("#split .bar-row")) {
      if (row.querySelector(".bar-label").textContent === c) {
        return Math.round(row.querySelector(".bar").getBoundingClientRect().width);
      }
    }
    return -1;
  }, cluster);
  await page.waitForFunction(() => document.querySelectorAll("#split .bar-row").length >= 2);
  let widths = [];
  for (let i = 0; i < 50; i++) {
    widths = [await widthOf("member1"), await widthOf("member2")];
    if (widths[1] > 0 && widths[0] === 2 * widths[1]) {
      break;
    }
    await page.waitForTimeout(200);
  }
  check(widths[1] > 0 && widths[0] === 2 * widths[1], `the split's bars are ${widths} wide, not 2:1`);
  await page.screenshot({ path: join(shots, "dashboard-split.png"), fullPage: true });

  for (const [path, name] of [["/clusters", "clusters"], ["/types", "types"]]) {
    await page.goto(base + path);
    await page.locator("main table").first().waitFor();
    await page.screenshot({ path: join(shots, `dashboard-${name}.png`), fullPage: true });
  }
  console.log("dashboard browser test passed");
} finally {
  await browser.close();
}
