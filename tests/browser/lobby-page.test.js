// The lobby page (examples/web) in a real browser against a real lobbyd: Debian's chromium
// driven by playwright-core, two pages signed in as two members. They chat both ways; alice
// creates a game, bob asks to join, alice approves, both pages show the player list; bob's
// ready flag and alice's start reach both. Screenshots go to target/browser/.
//
// Run with `make test-browser` (builds lobbyd, `npm ci` here, then `node --test`). It starts
// its own lobbyd (lobbyd.js) and stops it at the end; CHROMIUM names the browser (default
// /usr/bin/chromium). Every wait is bounded.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { ROOT, startLobbyd } from './lobbyd.js';

const ARTIFACTS = join(ROOT, 'target', 'browser');
const WAIT = 10_000; // ms, for anything one page waits for
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

let lobbyd;
let browser;
const problems = []; // console errors and page errors, from every page

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  lobbyd = await startLobbyd();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Chromium's sandbox refuses to run as root (CI containers).
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    timeout: 30_000,
  });
});

after(async () => {
  await browser?.close().catch(() => {});
  await lobbyd?.stop();
});

/** A fresh browser context with the page open and signed in as `name`. */
async function signedInPage(name) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`${name} console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${name} page error: ${error.message}`));
  await page.goto(lobbyd.httpUrl);
  await page.fill('#name', name);
  await page.click('#signin-form button[type=submit]');
  await page.locator('#lobby').waitFor({ state: 'visible' });
  assert.equal(await page.textContent('#connection'), 'connected to lobbyd');
  assert.equal(await page.textContent('#whoami'), `signed in as ${name} (member ${name === 'alice' ? 1 : 2})`);
  return page;
}

/** The texts of the elements `selector` matches, once `check(texts)` holds (bounded wait). */
async function textsWhen(page, selector, check, what) {
  try {
    await page.waitForFunction(
      ([sel, source]) => {
        const texts = [...document.querySelectorAll(sel)].map((node) => node.textContent.trim());
        return new Function('texts', `return (${source})(texts)`)(texts);
      },
      [selector, check.toString()],
      { timeout: WAIT },
    );
  } catch (error) {
    const texts = await page.$$eval(selector, (nodes) => nodes.map((node) => node.textContent.trim()));
    const statusLine = await page.textContent('#status');
    throw new Error(`${what}: ${JSON.stringify(texts)} (status: ${statusLine}) (${error.message.split('\n')[0]})`);
  }
  return page.$$eval(selector, (nodes) => nodes.map((node) => node.textContent.trim()));
}

test('two members in two pages: chat, create, ask to join, approve, ready, start', { timeout: 120_000 }, async (t) => {
  const alice = await signedInPage('alice');
  const bob = await signedInPage('bob');
  t.after(async () => {
    // The screenshots are the test's artifacts, kept whether it passed or not.
    await alice.screenshot({ path: join(ARTIFACTS, 'lobby-alice.png'), fullPage: true }).catch(() => {});
    await bob.screenshot({ path: join(ARTIFACTS, 'lobby-bob.png'), fullPage: true }).catch(() => {});
    if (problems.length || !t.passed) console.error(`lobbyd's log:\n${lobbyd.log()}`);
  });

  // Each page lists both members.
  for (const page of [alice, bob]) {
    await textsWhen(page, '#members li', (texts) => texts.includes('alice') && texts.includes('bob'), 'member list');
  }

  // Lobby chat, both ways: each line shows on both pages, with its speaker.
  await alice.fill('#chat-text', 'hello bob');
  await alice.press('#chat-text', 'Enter');
  await bob.fill('#chat-text', 'hi alice');
  await bob.press('#chat-text', 'Enter');
  for (const page of [alice, bob]) {
    await textsWhen(page, '#chat-log li', (texts) => texts.includes('alice:hello bob') && texts.includes('bob:hi alice'), 'chat log');
  }

  // alice creates a game; both pages list it with alice as its only player.
  await alice.fill('#game-name', 'Friday');
  await alice.fill('#game-max', '4');
  await alice.click('#create-form button[type=submit]');
  const card = alice.locator('#games > li', { has: alice.locator('.game-name', { hasText: /^Friday$/ }) });
  const friday = `#games > li[data-game="${await card.getAttribute('data-game')}"]`;
  for (const page of [alice, bob]) {
    await textsWhen(page, `${friday} .players li`, (texts) => texts.length === 1 && texts[0] === 'alice', 'players before the join');
  }

  // bob asks to join; alice gets the prompt and approves.
  await bob.click(`${friday} button.join`);
  await bob.locator(`${friday} button.join`, { hasText: 'Asked' }).waitFor();
  const ask = await textsWhen(alice, '#asks li span', (texts) => texts.length === 1, 'the owner\'s prompt');
  assert.equal(ask[0], 'bob asks to join Friday');
  await alice.screenshot({ path: join(ARTIFACTS, 'lobby-alice-ask.png'), fullPage: true });
  await alice.click('#asks li button.approve');
  await textsWhen(alice, '#asks li', (texts) => texts.length === 0, 'the prompt goes once answered');

  // Both pages show the player list: alice (owner) then bob, both ready (a joining player is).
  for (const page of [alice, bob]) {
    const players = await textsWhen(page, `${friday} .players li`, (texts) => texts.length === 2, 'players after the join');
    assert.deepEqual(players, ['alice', 'bob']);
    const ready = await page.$$eval(`${friday} .players li`, (nodes) => nodes.map((n) => n.classList.contains('ready')));
    assert.deepEqual(ready, [true, true]);
    const owner = await page.$$eval(`${friday} .players li`, (nodes) => nodes.map((n) => n.classList.contains('owner')));
    assert.deepEqual(owner, [true, false]);
  }
  await bob.locator('#status', { hasText: 'you joined Friday' }).waitFor();

  // bob toggles his ready flag off; alice's page sees it.
  await bob.click(`${friday} button.ready`);
  await alice.waitForFunction(
    (sel) => [...document.querySelectorAll(sel)].some((n) => n.textContent.trim() === 'bob' && !n.classList.contains('ready')),
    `${friday} .players li`,
  );
  // alice starts the game: both pages say so.
  await alice.click(`${friday} button.start`);
  for (const page of [alice, bob]) {
    await textsWhen(page, `${friday} .game-state`, (texts) => texts[0]?.includes('started'), 'game state');
    await textsWhen(page, '#chat-log li', (texts) => texts.includes('Friday started'), 'the start notice');
  }
  assert.deepEqual(problems, []);
});
