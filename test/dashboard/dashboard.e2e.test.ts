/**
 * The dashboard end to end: the local runtime (in memory) serves the page at GET /, a headless
 * Chromium (driven by playwright-core; see test/helpers/chromium.ts for where it comes from)
 * loads it, and the page must show what was submitted over HTTP. No silent skip: without a
 * Chromium the test fails and says how to get one.
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchedulerClient } from '../../client/sdk/client.ts';
import type { LocalServer } from '../../local/server.ts';
import { startQuietServer } from '../client/local-server.ts';
import { findChromium } from '../helpers/chromium.ts';

const SCREENSHOT = join('test-results', 'dashboard.png');

let server: LocalServer;
let context: BrowserContext;
let page: Page;
let profile: string;
const pageErrors: string[] = [];
const delayed: { taskId?: string; batchId?: string } = {};

beforeAll(async () => {
  const browser = await findChromium();
  server = await startQuietServer();
  const client = new SchedulerClient({ endpoint: server.url });
  // Acme's quota of 2 keeps some of its work queued; globex runs alongside it.
  await client.putTenant('acme', { weight: 2, maxConcurrency: 2 });
  await client.submitMany([
    ...Array.from({ length: 4 }, () => ({ tenantId: 'acme', type: 'demo.sleep', payload: { ms: 8_000 } })),
    ...Array.from({ length: 2 }, () => ({
      tenantId: 'globex',
      type: 'demo.sleep',
      payload: { ms: 8_000 },
      priority: 'high' as const,
    })),
  ]);
  delayed.taskId = (await client.submit({ tenantId: 'globex', type: 'demo.echo', delaySeconds: 3600 })).taskId;
  // A batch that stays open: one task ends at once, two wait an hour.
  const batch = await client.submitBatch([
    { tenantId: 'globex', type: 'demo.echo' },
    { tenantId: 'globex', type: 'demo.echo', delaySeconds: 3600 },
    { tenantId: 'globex', type: 'demo.echo', delaySeconds: 3600 },
  ]);
  delayed.batchId = batch.batches[0]!.batchId;

  profile = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: browser.executablePath,
    env: { ...process.env, ...browser.env },
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
});

afterAll(async () => {
  await context?.close();
  await server?.stop();
  if (profile) await rm(profile, { recursive: true, force: true });
});

describe('Dashboard in headless Chromium', () => {
  it('shows tiers, pools, tenants against quota and share, and recent tasks with wait reasons', async () => {
    // Act
    const response = await page.goto(`${server.url}/`);
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 15_000 });
    // Tenants appear once the scheduler publishes its snapshot (every 2 s), running work shortly after.
    await page.waitForSelector('tr[data-tenant="globex"]', { timeout: 20_000 });
    await page.waitForSelector('tr[data-state="RUNNING"]', { timeout: 20_000 });
    await page.locator('#conn', { hasText: /^live$/ }).waitFor({ timeout: 20_000 });

    // Assess
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.title()).toBe('Task scheduler — dashboard');
    expect(
      await page.locator('#tiers tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-tier'))),
    ).toEqual(['critical', 'high', 'normal', 'low']);
    expect(await page.locator('#pools tr').allTextContents()).toEqual([
      expect.stringMatching(/^Lambda slots\d+ \/ 50$/),
      'Fargate vCPU0 / 16',
      'Fargate memory0 / 32768 MiB',
    ]);
    const acme = page.locator('tr[data-tenant="acme"]');
    await expect.poll(() => acme.locator('td').nth(1).textContent(), { timeout: 10_000 }).toBe('2 / 2');
    expect(await acme.locator('.fill.full').count()).toBeGreaterThan(0);
    expect(await acme.locator('.mark').count()).toBe(1);
    expect(await page.locator('tr[data-tenant="globex"] td').first().textContent()).toBe('globex');
    const delayedRow = page.locator(`tr[data-task="${delayed.taskId}"]`);
    expect(await delayedRow.getAttribute('data-state')).toBe('QUEUED');
    expect(await delayedRow.locator('td').last().textContent()).toMatch(/^delayed: Not eligible before .+\(/);
    expect(await page.locator('tr[data-state="RUNNING"] .bar').count()).toBeGreaterThan(0);
    expect(await page.locator('#meta').textContent()).toMatch(
      /policy fair-share · aging every 5m 0s · [\d.]+ dispatches\/s/,
    );
    const batchRow = page.locator(`tr[data-batch="${delayed.batchId}"]`);
    await expect.poll(() => batchRow.locator('td').nth(2).textContent(), { timeout: 20_000 }).toBe('1 of 3 ended');
    expect(await batchRow.locator('td').last().textContent()).toBe('2');
    expect(pageErrors).toEqual([]);
  });

  it('renders to a non-trivial screenshot', async () => {
    // Act
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // Assess
    expect((await stat(SCREENSHOT)).size).toBeGreaterThan(10 * 1024);
    const { channels } = await sharp(SCREENSHOT).stats();
    // Not a single colour: text, bars and badges vary the pixels.
    expect(Math.max(...channels.map((channel) => channel.stdev))).toBeGreaterThan(10);
  });

  it('keeps the last figures and says so when the API stops answering', async () => {
    // Prepare
    await page.route('**/v1/status*', (route) => route.abort('connectionrefused'));

    // Act
    await page.waitForSelector('#error', { state: 'visible', timeout: 10_000 });

    // Assess
    expect(await page.locator('#conn').textContent()).toBe('API unreachable');
    expect(await page.locator('#error').textContent()).toContain('showing the last figures received');
    expect(await page.locator('tr[data-tenant="acme"]').count()).toBe(1);
    await page.unroute('**/v1/status*');
  });
});
